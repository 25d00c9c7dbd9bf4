// What PostgreSQL's backends of one database are doing while `work` runs: pg_stat_activity sampled every 10 ms from a
// connection of its own, each backend counted by its wait event (pg_stat_statements would need
// shared_preload_libraries, which a shared server does not have). A backend running a statement with no wait event
// is on a CPU or waiting for one; one idle in a transaction is waiting for its client's next statement (holding the
// transaction's row locks meanwhile).
import pg from 'pg';

export interface WaitSample {
  samples: number;
  interval_ms: number;
  /** The most frequent states, most first: how many backends were in each on average, and its share of them all. */
  top: { event: string; avg_backends: number; share_pct: number }[];
  /** Backends idle in a transaction, by the statement they last ran (its first 60 characters), most first. */
  idle_in_transaction_after: { statement: string; avg_backends: number; share_pct: number }[];
}

const INTERVAL_MS = 10;

export async function sampleWaits<T>(
  databaseUrl: string,
  database: string,
  work: () => Promise<T>,
): Promise<{ result: T; waits: WaitSample }> {
  const db = new pg.Client({ connectionString: databaseUrl, application_name: 'payments-bench-waits' });
  db.on('error', () => undefined); // the sampled database dropped under it: the sampling query fails instead
  await db.connect();
  const counts = new Map<string, number>();
  const idleAfter = new Map<string, number>();
  let samples = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      const started = performance.now();
      const { rows } = await db.query<{ event: string; last: string | null; n: number }>(
        `SELECT CASE WHEN state = 'idle in transaction' THEN 'Client:idle in transaction'
                     WHEN wait_event IS NULL THEN 'CPU (running or runnable)'
                     ELSE wait_event_type || ':' || wait_event END AS event,
                CASE WHEN state = 'idle in transaction' THEN left(regexp_replace(query, '\\s+', ' ', 'g'), 60) END AS last,
                count(*)::int AS n
         FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')
         GROUP BY 1, 2`,
        [database],
      );
      samples++;
      for (const r of rows) {
        counts.set(r.event, (counts.get(r.event) ?? 0) + r.n);
        if (r.last !== null) idleAfter.set(r.last, (idleAfter.get(r.last) ?? 0) + r.n);
      }
      const wait = INTERVAL_MS - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  try {
    const result = await work();
    return { result, waits: summary(counts, idleAfter, samples) };
  } finally {
    running = false;
    await sampler.catch(() => undefined);
    await db.end();
  }
}

/** The most frequent keys of `counts`, each with its average per sample and its share of the total. */
function ranked(counts: Map<string, number>, samples: number, limit: number): [string, number, number][] {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([key, n]) => [
      key,
      Math.round((n / Math.max(1, samples)) * 10) / 10,
      total === 0 ? 0 : Math.round((n / total) * 100),
    ]);
}

function summary(counts: Map<string, number>, idleAfter: Map<string, number>, samples: number): WaitSample {
  return {
    samples,
    interval_ms: INTERVAL_MS,
    top: ranked(counts, samples, 8).map(([event, avg_backends, share_pct]) => ({ event, avg_backends, share_pct })),
    idle_in_transaction_after: ranked(idleAfter, samples, 5).map(([statement, avg_backends, share_pct]) => ({
      statement,
      avg_backends,
      share_pct,
    })),
  };
}

/** One line for a report: `event avg (share%)` for the first few. */
export function describeWaits(w: WaitSample, count = 5): string {
  return w.top
    .slice(0, count)
    .map((t) => `${t.event} ${t.avg_backends} (${t.share_pct}%)`)
    .join(', ');
}
