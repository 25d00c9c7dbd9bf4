// SQL of the Daraja connector: the Transaction Status queries it has made and waits for answers to. Daraja answers
// such a query by callback; only an answer quoting the ConversationID Daraja gave us for a query we made is believed.
import type { Queryable } from '../../../db/pool.js';
import type { NoticeObjectType } from '../provider.js';

export interface PendingQuery {
  object_type: NoticeObjectType;
  object_id: string;
  /** What the callback that led to the query said, when one did: the answer must agree with it. */
  claimed_status: string | null;
  claimed_reason: string | null;
  claimed_receipt: string | null;
}

/** Records a query Daraja accepted, under the ConversationID it gave us. Maintenance-scoped: an operator answer names no workspace. */
export async function recordQuery(
  db: Queryable,
  provider: string,
  conversationId: string,
  query: PendingQuery,
): Promise<void> {
  await db.query(
    `INSERT INTO connector_queries (provider, query_id, workspace_id, object_type, object_id, claimed_status, claimed_reason, claimed_receipt, created_at)
     SELECT $1, $2, workspace_id, $3, $4, $5, $6, $7, now()
     FROM (SELECT workspace_id FROM collections WHERE id = $4 UNION ALL SELECT workspace_id FROM refunds WHERE id = $4
           UNION ALL SELECT workspace_id FROM payouts WHERE id = $4) owner
     LIMIT 1
     ON CONFLICT (provider, query_id) DO NOTHING`,
    [
      provider,
      conversationId,
      query.object_type,
      query.object_id,
      query.claimed_status,
      query.claimed_reason,
      query.claimed_receipt,
    ],
  );
}

/** Takes (reads and deletes) the query an answer names: an answer is used once. */
export async function takeQuery(
  db: Queryable,
  provider: string,
  conversationId: string,
): Promise<PendingQuery | undefined> {
  const { rows } = await db.query<PendingQuery>(
    `DELETE FROM connector_queries WHERE provider = $1 AND query_id = $2
     RETURNING object_type, object_id, claimed_status, claimed_reason, claimed_receipt`,
    [provider, conversationId],
  );
  return rows[0];
}

/**
 * Forgets up to `limit` queries made more than `olderThanSeconds` ago and never answered (Daraja does not repeat a
 * callback; the sweeps ask again), oldest first by the `connector_queries_created` index; returns how many.
 * Maintenance: spans workspaces.
 */
export async function purgeOldQueries(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM connector_queries WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM connector_queries WHERE created_at < now() - make_interval(secs => $1)
       ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/** An Account Balance query Daraja accepted: the ids its answer must quote. */
export interface BalanceQuery {
  conversationId: string;
  originator: string;
  ref: string;
}

/**
 * Records the connector's Account Balance query in flight (one per connector: a newer one replaces an older, whose
 * answer is then ignored). Platform-wide: an operator account belongs to no workspace.
 */
export async function recordBalanceQuery(db: Queryable, provider: string, query: BalanceQuery): Promise<void> {
  await db.query(
    `INSERT INTO operator_float_reads (connector, next_read_at, query_id, query_originator, query_ref, query_sent_at)
     VALUES ($1, now(), $2, $3, $4, now())
     ON CONFLICT (connector) DO UPDATE SET query_id = $2, query_originator = $3, query_ref = $4, query_sent_at = now()`,
    [provider, query.conversationId, query.originator, query.ref],
  );
}

/**
 * Takes the Account Balance query an answer names, if it is the one in flight: its ConversationID, its
 * OriginatorConversationID and our ref (from the ResultURL) must all match. An answer is used once.
 */
export async function takeBalanceQuery(db: Queryable, provider: string, query: BalanceQuery): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE operator_float_reads SET query_id = NULL, query_originator = NULL, query_ref = NULL, query_sent_at = NULL
     WHERE connector = $1 AND query_id = $2 AND query_originator = $3 AND query_ref = $4`,
    [provider, query.conversationId, query.originator, query.ref],
  );
  return (rowCount ?? 0) > 0;
}
