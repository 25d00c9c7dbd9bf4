// (i) Collections reaching `successful` per second through the running service: creates at the maximum rate for a
// while, with a payer number the sandbox simulator takes through pending and processing to successful (each step a
// signed callback through the provider-notice path, as a real provider's), then a drain until none of them is open.
// Counted from the database: the collections of the run (by their reference), their statuses, and the time from the
// first one's creation to the last one's success.
import pg from 'pg';
import { load, type LoadResult } from './load.js';
import type { RunningService } from './service.js';
import { sampleWaits, type WaitSample } from './waits.js';

/** A payer number the sandbox takes to successful (any but the test numbers 0001 to 0005). */
export const SUCCEEDING_PHONE = '+254712345678';

export interface LifecycleResult {
  workspaces: number;
  /** The create requests themselves (autocannon, 64 connections). */
  create: LoadResult;
  /** Collections the run created, those that reached successful, and those still open when the drain ended. */
  created: number;
  successful: number;
  still_open: number;
  /** From the first collection's creation to the last one's success. */
  seconds: number;
  /** Collections reaching successful per second, over `seconds`. */
  per_second: number;
  /** From a collection's creation to its success. */
  p50_ms: number;
  p99_ms: number;
  /** PostgreSQL's wait events over the load and the drain (with `--waits`). */
  waits?: WaitSample;
}

/** Makes `count` integrator workspaces through the admin API; returns their tokens as `Bearer …` values. */
export async function makeWorkspaces(service: RunningService, count: number, prefix: string): Promise<string[]> {
  const authorizations: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${service.url}/v1/admin/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${service.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `${prefix}-${i + 1}` }),
    });
    if (res.status !== 201) throw new Error(`creating a workspace answered ${res.status}: ${await res.text()}`);
    const created = (await res.json()) as { credential: { token: string } };
    authorizations.push(`Bearer ${created.credential.token}`);
  }
  return authorizations;
}

/**
 * Creates collections at the maximum rate for `seconds` over `connections`, each request in one of the workspaces
 * of `authorizations` at random, all with `reference`; then waits (at most `drainSeconds`) until none is open.
 */
export async function measureLifecycle(
  service: RunningService,
  createUrl: string,
  authorizations: string[],
  reference: string,
  connections: number,
  seconds: number,
  drainSeconds: number,
  waits: boolean,
): Promise<LifecycleResult> {
  const body = JSON.stringify({
    amount: 1500,
    currency: 'KES',
    reference,
    customer: { phone_number: SUCCEEDING_PHONE },
    metadata: { order_id: '42', cart: { items: 2 } },
  });
  const db = new pg.Client({ connectionString: service.databaseUrl, application_name: 'payments-bench' });
  db.on('error', () => undefined); // a connection the server ends fails its next query instead
  await db.connect();
  try {
    const work = async () => {
      const create = await load({
        url: createUrl,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        authorizations,
        body,
        freshKey: true,
        connections,
        seconds,
        expect: 201,
        pushedBack: 503,
      });
      await drain(db, reference, drainSeconds);
      return create;
    };
    const database = new URL(service.databaseUrl).pathname.slice(1);
    const { result: create, waits: sampled } = waits
      ? await sampleWaits(service.databaseUrl, database, work)
      : { result: await work(), waits: undefined };
    const { rows } = await db.query<{
      created: number;
      successful: number;
      open: number;
      span: number | null;
      p: number[] | null;
    }>(
      `SELECT count(*)::int AS created,
              count(*) FILTER (WHERE status = 'successful')::int AS successful,
              count(*) FILTER (WHERE status IN ('created', 'pending', 'processing'))::int AS open,
              extract(epoch FROM max(updated_at) FILTER (WHERE status = 'successful') - min(created_at))::float8 AS span,
              percentile_disc(array[0.5, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM updated_at - created_at) * 1000)
                FILTER (WHERE status = 'successful') AS p
       FROM collections WHERE reference = $1`,
      [reference],
    );
    const r = rows[0];
    if (!r) throw new Error('the lifecycle count returned no row');
    const span = r.span ?? 0;
    const [p50 = 0, p99 = 0] = r.p ?? [];
    return {
      workspaces: authorizations.length,
      create,
      created: r.created,
      successful: r.successful,
      still_open: r.open,
      seconds: Math.round(span * 10) / 10,
      per_second: span > 0 ? Math.round(r.successful / span) : 0,
      p50_ms: Math.round(p50),
      p99_ms: Math.round(p99),
      ...(sampled ? { waits: sampled } : {}),
    };
  } finally {
    await db.end();
  }
}

/** Waits until no collection of the run is open (created, pending or processing), for at most `seconds`. */
async function drain(db: pg.Client, reference: string, seconds: number): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    const { rows } = await db.query<{ open: number }>(
      `SELECT count(*)::int AS open FROM collections
       WHERE reference = $1 AND status IN ('created', 'pending', 'processing')`,
      [reference],
    );
    if (rows[0]?.open === 0) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}
