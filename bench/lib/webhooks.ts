// Webhook deliveries per second to a loopback receiver, and the time from a recorded change to its delivery, through
// the running service's own relay. Events are written as the lifecycle writes them: the event row and its outbox row
// in one statement.
import { Payments } from '../../packages/sdk/src/index.js';
import http from 'node:http';
import pg from 'pg';
import { recordEvents } from '../../test/helpers/events.js';
import { withCpu } from './load.js';
import type { RunningService } from './service.js';

export interface WebhookResult {
  burst_events: number;
  deliveries_per_second: number;
  /** How busy the whole machine was during the burst. */
  machine_busy_pct: number;
  paced_events: number;
  pace_ms: number;
  change_to_delivery_p50_ms: number;
  change_to_delivery_p99_ms: number;
}

export async function measureWebhooks(
  service: RunningService,
  burst: number,
  paced = 300,
  paceMs = 10,
  warm = Math.ceil(burst / 10),
): Promise<WebhookResult> {
  const lags: number[] = [];
  let received = 0;
  const seen = new Set<string>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const event = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; timestamp: string };
      // A delivery sent twice (at least once) counts once.
      if (!seen.has(event.id)) {
        seen.add(event.id);
        received++;
        lags.push(Date.now() - Date.parse(event.timestamp));
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as { port: number }).port;
  const payments = new Payments({ token: service.demoToken, baseUrl: service.url });
  const db = new pg.Client({ connectionString: service.databaseUrl });
  await db.connect();
  let endpointId: string | undefined;
  try {
    // Set-up through our own client; the load itself is raw HTTP, so the client is not what is measured.
    endpointId = (
      await payments.webhookEndpoints.create({ url: `http://127.0.0.1:${port}/`, enabled_events: ['payout.created'] })
    ).id;
    await new Promise((r) => setTimeout(r, 50));
    const record = (count: number) =>
      recordEvents(db, service.demoWorkspaceId, 'payout.created', count, { metadata: { order: '42' } });
    const waitFor = async (n: number, ms: number) => {
      const until = Date.now() + ms;
      while (received < n) {
        if (Date.now() > until) throw new Error(`only ${received} of ${n} webhook deliveries arrived in ${ms} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    // Warm-up: the relay's code and connections as a busy service has them (the service's other paths are warm by now).
    await record(warm);
    await waitFor(warm, 60_000);
    received = 0;
    lags.length = 0;

    // Throughput: a burst recorded at once.
    const started = performance.now();
    const { machine_busy_pct } = await withCpu(async () => {
      await record(burst);
      await waitFor(burst, 120_000);
      return {};
    });
    const seconds = (performance.now() - started) / 1000;

    // Latency: changes at a steady pace, well under the maximum rate.
    received = 0;
    lags.length = 0;
    for (let i = 0; i < paced; i++) {
      await record(1);
      await new Promise((r) => setTimeout(r, paceMs));
    }
    await waitFor(paced, 60_000);
    lags.sort((a, b) => a - b);
    return {
      burst_events: burst,
      deliveries_per_second: Math.round(burst / seconds),
      machine_busy_pct,
      paced_events: paced,
      pace_ms: paceMs,
      change_to_delivery_p50_ms: lags[Math.floor(lags.length * 0.5)] ?? 0,
      change_to_delivery_p99_ms: lags[Math.floor(lags.length * 0.99)] ?? 0,
    };
  } finally {
    // The endpoint goes with its receiver, so a later measurement's events are not also sent to a closed port.
    if (endpointId) await payments.webhookEndpoints.delete(endpointId);
    await db.end();
    receiver.closeAllConnections();
    receiver.close();
  }
}
