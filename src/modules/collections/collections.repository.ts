// SQL for collections. The workspace id is always the first argument.
import type { Queryable } from '../../db/pool.js';
import type { Statement } from '../events/events.repository.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { CollectionStatus } from './collections.schemas.js';

export interface CollectionRow {
  id: string;
  workspace_id: string;
  market: string;
  rail: string;
  amount: number;
  currency: string;
  reference: string;
  status: CollectionStatus;
  customer: Record<string, string>;
  metadata: Record<string, unknown>;
  payment_instruction: Record<string, string> | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  /** Name of the rail provider running it (`sandbox` in the sandbox). */
  provider: string;
  provider_reference: string | null;
  /** The operator's receipt of the payment (an M-Pesa receipt number…), once it confirmed it. */
  provider_receipt: string | null;
  /** When the provider accepted (or refused) the initiation; null until then. */
  submitted_at: Date | null;
  failure_reason: string | null;
  /** The hosted checkout session this collection is a payment attempt of; null for collections made through the API. */
  checkout_session_id: string | null;
}

export const COLLECTION_COLUMNS =
  'id, workspace_id, market, rail, amount, currency, reference, status, customer, metadata, payment_instruction, created_at, updated_at, expires_at, ' +
  'provider, provider_reference, provider_receipt, submitted_at, failure_reason, checkout_session_id';

/** The INSERT of a new collection (run with its `collection.created` event: `recordEvent`'s `change`). */
export function insertCollection(workspaceId: string, c: Omit<CollectionRow, 'workspace_id'>): Statement {
  return {
    // The initiation sweep leaves a new collection to the submitter's immediate kick for its first 5 seconds.
    text: `INSERT INTO collections (${COLLECTION_COLUMNS}, submit_after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL, NULL, NULL, NULL, $16, $12::timestamptz + interval '5 seconds')`,
    values: [
      c.id,
      workspaceId,
      c.market,
      c.rail,
      c.amount,
      c.currency,
      c.reference,
      c.status,
      JSON.stringify(c.customer),
      JSON.stringify(c.metadata),
      c.payment_instruction === null ? null : JSON.stringify(c.payment_instruction),
      c.created_at,
      c.updated_at,
      c.expires_at,
      c.provider,
      c.checkout_session_id,
    ],
  };
}

/** The row, locked for the rest of the transaction: every status change goes through here. */
export async function lockCollection(
  tx: Queryable,
  workspaceId: string,
  id: string,
): Promise<CollectionRow | undefined> {
  const { rows } = await tx.query<CollectionRow>(
    `SELECT ${COLLECTION_COLUMNS} FROM collections WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function findCollection(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<CollectionRow | undefined> {
  const { rows } = await db.query<CollectionRow>(
    `SELECT ${COLLECTION_COLUMNS} FROM collections WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** The metadata of several collections (a page of refunds shows each refunded collection's), by collection id. */
export async function collectionMetadata(
  db: Queryable,
  workspaceId: string,
  ids: string[],
): Promise<Map<string, Record<string, unknown>>> {
  const { rows } = await db.query<{ id: string; metadata: Record<string, unknown> }>(
    'SELECT id, metadata FROM collections WHERE workspace_id = $1 AND id = ANY($2::uuid[])',
    [workspaceId, ids],
  );
  return new Map(rows.map((r) => [r.id, r.metadata]));
}

/** The exact-match filters of the collections list, each served by an index of migration 020. */
export interface CollectionMatch {
  market?: string | undefined;
  rail?: string | undefined;
  reference?: string | undefined;
  phone_number?: string | undefined;
}

/** A page of collections, newest first. */
export async function listCollections(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<CollectionStatus>,
  match: CollectionMatch = {},
): Promise<CollectionRow[]> {
  const scope: Record<string, unknown> = { workspace_id: workspaceId };
  if (match.market !== undefined) scope.market = match.market;
  if (match.rail !== undefined) scope.rail = match.rail;
  if (match.reference !== undefined) scope.reference = match.reference;
  // The expression of the collections_list_phone index, written the same way so that the index serves it.
  if (match.phone_number !== undefined) scope["(customer->>'phone_number')"] = match.phone_number;
  const { text, values } = listQuery('collections', COLLECTION_COLUMNS, scope, f);
  return (await db.query<CollectionRow>(text, values)).rows;
}
