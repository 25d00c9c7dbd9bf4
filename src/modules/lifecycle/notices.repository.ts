// SQL of provider notices: the record of each notice applied, and the references operators' callbacks claim.
// Maintenance-scoped where noted: a provider names our object id, not its workspace.
import type { Queryable } from '../../db/pool.js';
import { unnestOf, type Param } from '../../db/parameters.js';
import type { NoticeObjectType } from '../providers/provider.js';
import type { AnyMovement, AppliedNotice, MovingRow, Versioned } from './movement.js';

const TABLES: Record<NoticeObjectType, string> = { collection: 'collections', refund: 'refunds', payout: 'payouts' };

/** An object a provider names, as read by `objectOwners`: its workspace, its provider, and the rest of its row. */
export type ObjectOwner = Versioned<MovingRow>;

/**
 * Who owns a collection, refund or payout and which provider runs it, with its row as read (and its version, for a
 * move made from it by compare-and-set). Provider callbacks name our object id but not its workspace: the one lookup
 * by id alone outside maintenance. Everything after it is scoped by the workspace found here. Any number of ids in one
 * statement (the notices of callbacks received at once: see `Coalescer`).
 */
export async function objectOwners(
  db: Queryable,
  m: AnyMovement,
  ids: readonly string[],
): Promise<Map<string, ObjectOwner>> {
  const { rows } = await db.query<ObjectOwner>(
    `SELECT ${m.columns}, xmin::text AS version FROM ${m.table} WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

interface NoticeInput {
  noticeId: string;
  objectType: NoticeObjectType;
  objectId: string;
  status: string;
}

const NOTICE_COLUMNS = 'provider, notice_id, workspace_id, object_type, object_id, status, outcome, received_at';

const noticeValues = (provider: string, workspaceId: string, notice: NoticeInput, outcome: string): unknown[] => [
  provider,
  notice.noticeId,
  workspaceId,
  notice.objectType,
  notice.objectId,
  notice.status,
  outcome,
];

/** Records a notice as applied (or refused); false when the same notice id was recorded before. */
export async function recordNotice(
  db: Queryable,
  provider: string,
  workspaceId: string,
  notice: NoticeInput,
  outcome: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO provider_notices (${NOTICE_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, now()) ON CONFLICT (provider, notice_id) DO NOTHING`,
    noticeValues(provider, workspaceId, notice, outcome),
  );
  return rowCount === 1;
}

/**
 * The write (`noted AS (…)`, for a data-modifying WITH) of the records of notices applied, one per part, made only
 * for the parts that `written` (an SQL query of part numbers) names; it answers the object id of each record written.
 * A statement's notices are all strict or none (the batcher combines only moves of one strictness).
 */
export function noticeWrites(
  records: readonly { part: number; applied: AppliedNotice }[],
  written: string,
  param: Param,
): string {
  const strict = records.some((r) => r.applied.strict);
  return `noted AS (
       INSERT INTO provider_notices (${NOTICE_COLUMNS})
       SELECT n.provider, n.notice_id, n.workspace_id, n.object_type, n.object_id, n.status, 'applied', now()
       FROM ${unnestOf(param, records, 'n', {
         part: [(r) => r.part, 'int'],
         provider: [(r) => r.applied.provider, 'text'],
         notice_id: [(r) => r.applied.notice.noticeId, 'text'],
         workspace_id: [(r) => r.applied.workspaceId, 'uuid'],
         object_type: [(r) => r.applied.notice.objectType, 'text'],
         object_id: [(r) => r.applied.notice.objectId, 'uuid'],
         status: [(r) => r.applied.notice.status, 'text'],
       })}
       WHERE n.part IN (${written})
       ${strict ? '' : 'ON CONFLICT (provider, notice_id) DO NOTHING'} RETURNING object_id)`;
}

/** Whether a notice of that id was recorded already (applied or refused before). */
export async function noticeRecorded(db: Queryable, provider: string, noticeId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM provider_notices WHERE provider = $1 AND notice_id = $2', [
    provider,
    noticeId,
  ]);
  return rowCount === 1;
}

/**
 * Deletes up to `limit` notices received more than `olderThanSeconds` ago, oldest first by the
 * `provider_notices_received` index; returns how many. Maintenance: spans workspaces. A notice repeated after its
 * record went is no longer recognised by id, but the transition table still makes it change nothing (a status the
 * object has is a duplicate, one it has left is refused): see PROVIDER_NOTICE_RETENTION_DAYS in src/config.ts.
 */
export async function purgeNotices(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM provider_notices WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM provider_notices WHERE received_at < now() - make_interval(secs => $1)
       ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/**
 * Keeps the reference an unsigned callback names for an operation that has none recorded (its initiation's answer
 * was lost), so that the sweeps can ask the operator about it even if this process stops. Never overwrites.
 */
export async function noteClaimedReference(
  db: Queryable,
  workspaceId: string,
  objectType: NoticeObjectType,
  id: string,
  reference: string,
): Promise<void> {
  await db.query(
    `UPDATE ${TABLES[objectType]} SET claimed_reference = $3
     WHERE workspace_id = $1 AND id = $2 AND provider_reference IS NULL AND claimed_reference IS NULL`,
    [workspaceId, id, reference],
  );
}
