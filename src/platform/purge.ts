// Deleting what is past its retention without long locks: one small DELETE after another, each its own statement
// and so its own short transaction, never one transaction across batches. A single DELETE of every old row would hold
// its row locks and its snapshot (holding back vacuum) for as long as it takes, and write all its WAL at once.

export interface PurgeResult {
  /** Rows deleted in all. */
  deleted: number;
  /** Statements run: the last one deleted fewer than the batch size (possibly none). */
  batches: number;
}

/**
 * Runs `deleteBatch(batchSize)` until a batch deletes fewer than `batchSize` rows. `deleteBatch` must be one
 * statement on a pool (not inside a transaction) that deletes at most `limit` rows and returns how many.
 */
export async function deleteInBatches(
  batchSize: number,
  deleteBatch: (limit: number) => Promise<number>,
): Promise<PurgeResult> {
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`batch size must be a positive integer`);
  let deleted = 0;
  let batches = 0;
  for (;;) {
    const n = await deleteBatch(batchSize);
    deleted += n;
    batches += 1;
    if (n < batchSize) return { deleted, batches };
  }
}
