// The database side of a measurement: waiting for the service to finish what a run left it, and the planner's
// statistics, as bench/run.ts and bench/tail.ts both take them before (g).
import pg from 'pg';

/** Runs `work` on a connection of its own to the service's database, closed afterwards. */
export async function withClient<T>(databaseUrl: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/** Waits until the service has handed every new collection to its provider and published every event. */
export function settle(databaseUrl: string): Promise<void> {
  return withClient(databaseUrl, async (db) => {
    const until = Date.now() + 120_000;
    for (;;) {
      const { rows } = await db.query<{ backlog: string }>(
        `SELECT (SELECT count(*) FROM collections WHERE submitted_at IS NULL) + (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS backlog`,
      );
      if (Number(rows[0]?.backlog) === 0) return;
      if (Date.now() > until)
        throw new Error(`the service still had ${rows[0]?.backlog} collections or events to process after 120 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
}

/** The planner's statistics brought up to date (ANALYZE): bench/run.ts says why, before (g). */
export async function analyze(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (db) => db.query('ANALYZE'));
}
