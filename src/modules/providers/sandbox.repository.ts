// SQL of the sandbox simulator: its own side of the world, one row per operation in `sandbox_operations` (the
// statuses still to report and when the next is due). Keyed by our object id, which is unique across workspaces.
import type { Queryable } from '../../db/pool.js';
import type { NoticeObjectType } from './provider.js';

export interface DueOperation {
  object_id: string;
  object_type: NoticeObjectType;
  reference: string;
  script: string[];
  next_step: number;
}

/** The operation's reference, script and progress, if it was opened. */
export async function findOperation(
  db: Queryable,
  objectType: NoticeObjectType,
  objectId: string,
): Promise<{ reference: string; script: string[]; next_step: number } | undefined> {
  const { rows } = await db.query<{ reference: string; script: string[]; next_step: number }>(
    'SELECT reference, script, next_step FROM sandbox_operations WHERE object_id = $1 AND object_type = $2',
    [objectId, objectType],
  );
  return rows[0];
}

/**
 * Opens an operation with its script, once: a second call answers what the first stored (its reference and first
 * step). The next step is due after `stepMs` when the script has one.
 */
export async function openOperation(
  db: Queryable,
  op: { objectId: string; workspaceId: string; objectType: NoticeObjectType; reference: string; script: string[] },
  stepMs: number,
): Promise<{ reference: string; first: string } | undefined> {
  const { rows } = await db.query<{ reference: string; first: string }>(
    `WITH ins AS (
       INSERT INTO sandbox_operations (object_id, workspace_id, object_type, reference, script, next_step, next_at, created_at)
       VALUES ($1, $2, $3, $4, $5, 1,
               CASE WHEN cardinality($5::text[]) > 1 THEN now() + make_interval(secs => $6 / 1000.0) END, now())
       ON CONFLICT (object_id) DO NOTHING
       RETURNING reference, script[1] AS first)
     SELECT reference, first FROM ins
     UNION ALL
     SELECT reference, script[1] FROM sandbox_operations WHERE object_id = $1
     LIMIT 1`,
    [op.objectId, op.workspaceId, op.objectType, op.reference, op.script, stepMs],
  );
  if (rows[0]) return rows[0];
  // Two initiations at once: the second's statement saw neither its own insert (it conflicted) nor the first's (not
  // yet committed when it started); read it again now that it is.
  const again = await db.query<{ reference: string; first: string }>(
    'SELECT reference, script[1] AS first FROM sandbox_operations WHERE object_id = $1',
    [op.objectId],
  );
  return again.rows[0];
}

/**
 * Claims up to `limit` operations whose next step is due, leasing each for `leaseMs`. A step waits until the answer to
 * its initiation is recorded (the object has its `submitted_at`): the simulator never reports on an operation before
 * the service has heard that it took it, so a sandbox object's events always follow its script in order. (A real
 * operator's callback can overtake its answer; the lifecycle walks the statuses between then.)
 */
export async function claimDue(db: Queryable, limit: number, leaseMs: number): Promise<DueOperation[]> {
  const { rows } = await db.query<DueOperation>(
    `UPDATE sandbox_operations o SET next_at = now() + make_interval(secs => $2 / 1000.0)
     FROM (SELECT s.object_id FROM sandbox_operations s
           WHERE s.next_at <= now()
             AND CASE s.object_type
                   WHEN 'collection' THEN EXISTS (SELECT 1 FROM collections c WHERE c.id = s.object_id AND c.submitted_at IS NOT NULL)
                   WHEN 'refund' THEN EXISTS (SELECT 1 FROM refunds r WHERE r.id = s.object_id AND r.submitted_at IS NOT NULL)
                   ELSE EXISTS (SELECT 1 FROM payouts p WHERE p.id = s.object_id AND p.submitted_at IS NOT NULL)
                 END
           ORDER BY s.next_at LIMIT $1 FOR UPDATE OF s SKIP LOCKED) due
     WHERE o.object_id = due.object_id
     RETURNING o.object_id, o.object_type, o.reference, o.script, o.next_step`,
    [limit, leaseMs],
  );
  return rows;
}

/** These steps were delivered: each operation's next one is due after `stepMs`, or it is done. A step changed meanwhile (driven by hand) wins. */
export async function advance(db: Queryable, ops: DueOperation[], stepMs: number): Promise<void> {
  await db.query(
    `UPDATE sandbox_operations o
     SET next_step = o.next_step + 1,
         next_at = CASE WHEN o.next_step + 1 < cardinality(o.script) THEN now() + make_interval(secs => $3 / 1000.0) END
     FROM unnest($1::uuid[], $2::int[]) AS done(object_id, step)
     WHERE o.object_id = done.object_id AND o.next_step = done.step`,
    [ops.map((o) => o.object_id), ops.map((o) => o.next_step), stepMs],
  );
}

/**
 * Ends the operation's script with a hand-driven status (or only stops it when `status` is null), opening it if it
 * was not opened yet, so an initiation that comes later answers from it.
 */
export async function driveByHand(
  tx: Queryable,
  op: { objectId: string; workspaceId: string; objectType: NoticeObjectType; reference: string },
  status: string | null,
): Promise<void> {
  await tx.query(
    `INSERT INTO sandbox_operations AS o (object_id, workspace_id, object_type, reference, script, next_step, next_at, created_at)
     VALUES ($1, $2, $3, $4, ARRAY[coalesce($5, 'pending')], 1, NULL, now())
     ON CONFLICT (object_id) DO UPDATE
     SET script = CASE WHEN $5::text IS NULL THEN o.script ELSE o.script[1:o.next_step] || $5::text END,
         next_step = CASE WHEN $5::text IS NULL THEN o.next_step ELSE o.next_step + 1 END,
         next_at = NULL`,
    [op.objectId, op.workspaceId, op.objectType, op.reference, status],
  );
}
