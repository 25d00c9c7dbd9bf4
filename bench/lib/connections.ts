// Room on a shared PostgreSQL server: the raw-connection measurements ((b), (h)) open 64 connections at once, which a
// server of 100 (the default max_connections) cannot give while other processes' tests hold many of theirs.
import pg from 'pg';

/**
 * Waits (at most `seconds`) until the server `databaseUrl` names has `count` connections to spare, with a margin of
 * two for the bench's own; returns at once on a server with room. `log` says so when it has to wait.
 */
export async function roomFor(
  databaseUrl: string,
  count: number,
  log: (m: string) => void,
  seconds = 120,
): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl, application_name: 'payments-bench' });
  db.on('error', () => undefined);
  await db.connect();
  try {
    const until = Date.now() + seconds * 1000;
    let told = false;
    for (;;) {
      const { rows } = await db.query<{ free: number }>(
        `SELECT current_setting('max_connections')::int - count(*)::int AS free
         FROM pg_stat_activity WHERE backend_type = 'client backend'`,
      );
      const free = rows[0]?.free ?? 0;
      if (free >= count + 2 || Date.now() > until) return;
      if (!told) log(`waiting for ${count} free connections on the server (${free} now)`);
      told = true;
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await db.end();
  }
}
