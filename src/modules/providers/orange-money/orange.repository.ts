// SQL of the Orange Money connector: the Web Payment sessions Orange opened for our collections, with what its status
// call needs (order_id, amount, pay_token) and the SHA-256 of the notif_token its notification must carry. An
// operator's notification names no workspace: the reads by pay_token or notif_token are maintenance-scoped, each to
// one connector and one collection.
import type { Queryable } from '../../../db/pool.js';

export interface Webpayment {
  workspace_id: string;
  collection_id: string;
  order_id: string;
  amount: number;
  pay_token: string;
  payment_url: string;
}

/** Records a session Orange opened (the answer to one webpayment call); the same pay_token again changes nothing. */
export async function recordWebpayment(
  db: Queryable,
  workspaceId: string,
  provider: string,
  session: Omit<Webpayment, 'workspace_id'> & { notifTokenHash: Buffer },
): Promise<void> {
  await db.query(
    `INSERT INTO orange_webpayments (workspace_id, provider, collection_id, order_id, amount, pay_token, payment_url, notif_token_hash, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
     ON CONFLICT (workspace_id, provider, pay_token) DO NOTHING`,
    [
      workspaceId,
      provider,
      session.collection_id,
      session.order_id,
      session.amount,
      session.pay_token,
      session.payment_url,
      session.notifTokenHash,
    ],
  );
}

const COLUMNS = 'workspace_id, collection_id, order_id, amount::float8 AS amount, pay_token, payment_url';

/** The session of a collection with that pay_token (the reference Orange gave us). Maintenance-scoped. */
export async function webpaymentByPayToken(
  db: Queryable,
  provider: string,
  collectionId: string,
  payToken: string,
): Promise<Webpayment | undefined> {
  const res = await db.query<Webpayment>(
    `SELECT ${COLUMNS} FROM orange_webpayments WHERE provider = $1 AND pay_token = $2 AND collection_id = $3`,
    [provider, payToken, collectionId],
  );
  return res.rows[0];
}

/** The session of a collection whose notif_token has this SHA-256, if Orange gave us one. Maintenance-scoped. */
export async function webpaymentByNotifToken(
  db: Queryable,
  provider: string,
  collectionId: string,
  notifTokenHash: Buffer,
): Promise<Webpayment | undefined> {
  const res = await db.query<Webpayment>(
    `SELECT ${COLUMNS} FROM orange_webpayments
     WHERE provider = $1 AND collection_id = $2 AND notif_token_hash = $3
     ORDER BY created_at DESC LIMIT 1`,
    [provider, collectionId, notifTokenHash],
  );
  return res.rows[0];
}

/** The latest session Orange opened for a collection (an initiation whose answer was kept here but not recorded on the collection). */
export async function latestWebpayment(
  db: Queryable,
  provider: string,
  collectionId: string,
): Promise<Webpayment | undefined> {
  const res = await db.query<Webpayment>(
    `SELECT ${COLUMNS} FROM orange_webpayments WHERE provider = $1 AND collection_id = $2 ORDER BY created_at DESC LIMIT 1`,
    [provider, collectionId],
  );
  return res.rows[0];
}

/**
 * Forgets up to `limit` sessions opened more than `olderThanSeconds` ago, oldest first by the
 * `orange_webpayments_created` index; returns how many. Maintenance: spans workspaces.
 */
export async function purgeOldWebpayments(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM orange_webpayments WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM orange_webpayments WHERE created_at < now() - make_interval(secs => $1)
       ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
