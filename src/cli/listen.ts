// `npm run listen`: webhooks on your machine while you build, like `stripe listen`. Registers a temporary
// endpoint in a sandbox workspace pointing at a receiver this command runs, verifies and prints each event
// as it arrives, optionally forwards it (body and signature headers unchanged) to your local app, and
// removes the endpoint when you stop it.
import http from 'node:http';
import { parseArgs } from 'node:util';
import { Payments, PaymentsError, type WebhookEvent } from '../../packages/sdk/src/index.js';
import { EVENT_TYPES } from '../modules/webhooks/event-types.js';

const USAGE = `Usage: npm run listen -- [options]

  --api-key <token>     an integrator token of a sandbox workspace (default: $PAYMENTS_API_KEY)
  --base-url <url>      the payments service (default: $PAYMENTS_BASE_URL or http://localhost:8080)
  --forward-to <url>    POST every event to this URL too, body and webhook-* headers unchanged;
                        its status code is what the service sees, so failures there are retried
  --events <types>      comma-separated event types to receive (default: all)
  --port <n>            port of the local receiver (default: any free port)
  --public-url <url>    the URL the service should deliver to, when it cannot reach this machine's
                        127.0.0.1 (a tunnel); default http://127.0.0.1:<port>/
  --json                print each event's whole JSON body instead of one line
  --help                this text

Stop with Ctrl-C: the temporary endpoint is removed.
`;

function fail(message: string, code = 2): never {
  process.stderr.write(`listen: ${message}\n`);
  process.exit(code);
}

let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      'api-key': { type: 'string' },
      'base-url': { type: 'string' },
      'forward-to': { type: 'string' },
      events: { type: 'string' },
      port: { type: 'string' },
      'public-url': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  }).values;
}
try {
  args = parse();
} catch (err) {
  fail(`${(err as Error).message}\n\n${USAGE}`);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const apiKey = args['api-key'] ?? process.env.PAYMENTS_API_KEY;
if (!apiKey) fail('an API key is needed: --api-key or PAYMENTS_API_KEY (an integrator token of a sandbox workspace)');
const baseUrl = (args['base-url'] ?? process.env.PAYMENTS_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
const events =
  args.events === undefined
    ? ['*']
    : args.events
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
const unknown = events.filter((e) => e !== '*' && !EVENT_TYPES.includes(e));
if (unknown.length > 0) fail(`unknown event type ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
for (const [name, value] of [
  ['--base-url', baseUrl],
  ['--forward-to', args['forward-to']],
  ['--public-url', args['public-url']],
] as const) {
  if (value === undefined) continue;
  try {
    new URL(value);
  } catch {
    fail(`${name} must be an absolute URL, got '${value}'`);
  }
}
const port = args.port === undefined ? 0 : Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be a port number, got '${args.port}'`);

// The service through our own client (packages/sdk): typed calls, problems as PaymentsError.
const payments = new Payments({ token: apiKey, baseUrl, timeoutMs: 15_000, maxRetries: 1 });

function problem(err: unknown): string {
  return err instanceof PaymentsError ? `${err.status} ${err.code}: ${err.problem.detail}` : (err as Error).message;
}

let workspace: Awaited<ReturnType<typeof payments.workspace.get>>;
try {
  workspace = await payments.workspace.get();
} catch (err) {
  if (err instanceof PaymentsError) fail(`the service refused the API key (${problem(err)})`);
  fail(`cannot reach ${baseUrl}: ${(err as Error).message}`);
}
if (workspace.environment !== 'sandbox')
  fail('listen works only with sandbox workspaces: this key belongs to production');

// Set once the endpoint exists; a delivery before that cannot be verified.
const receiver: { secret?: string } = {};
const forwardTo = args['forward-to'];

async function forward(body: string, headers: Record<string, string>): Promise<{ status: number; label: string }> {
  if (forwardTo === undefined) return { status: 200, label: '' };
  try {
    const res = await fetch(forwardTo, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return { status: res.status, label: `  → ${forwardTo} ${res.status}` };
  } catch (err) {
    return {
      status: 502,
      label: `  → ${forwardTo} failed: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
    };
  }
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      let event: WebhookEvent;
      try {
        if (receiver.secret === undefined) throw new Error('not ready');
        event = payments.webhooks.verify(body, headers, receiver.secret);
      } catch (err) {
        process.stdout.write(
          `${new Date().toISOString()}  rejected a delivery that does not verify: ${(err as Error).message}\n`,
        );
        res.writeHead(400).end();
        return;
      }
      const { status, label } = await forward(body, headers);
      if (args.json) process.stdout.write(`${body}\n`);
      else {
        const data = event.data as { collection_id?: string; refund_id?: string };
        const object = data.collection_id ?? data.refund_id ?? '';
        process.stdout.write(`${event.timestamp}  ${event.type.padEnd(22)} ${event.id}  ${String(object)}${label}\n`);
      }
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'forward failed');
    })();
  });
});
await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
}).catch((err: unknown) => fail(`cannot listen on 127.0.0.1:${port}: ${(err as Error).message}`));
const address = server.address();
const localUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}/`;
const deliverTo = args['public-url'] ?? localUrl;

// Installed before the endpoint exists, so a stop at any moment (Ctrl-C, a closed terminal, a crash)
// removes whatever was registered.
const run: { endpointId?: string; stopping: boolean; creating: boolean } = { stopping: false, creating: false };
async function stop(reason: string, code = 0): Promise<void> {
  if (run.stopping) return;
  run.stopping = true;
  const { endpointId } = run;
  server.closeAllConnections();
  server.close();
  if (endpointId === undefined) {
    if (run.creating) return; // finished once the endpoint exists, so it can be removed
    process.exit(code);
  }
  const failure = await payments.webhookEndpoints.delete(endpointId).then(
    () => undefined,
    (err: unknown) => err,
  );
  if (failure === undefined || (failure instanceof PaymentsError && failure.status === 404)) {
    process.stdout.write(`Stopped (${reason}); endpoint ${endpointId} removed.\n`);
    process.exit(code);
  }
  process.stderr.write(
    `listen: stopped, but endpoint ${endpointId} could not be removed (${problem(failure)}); delete it yourself\n`,
  );
  process.exit(1);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal));
process.on('uncaughtException', (err) => {
  process.stderr.write(`listen: ${err.message}\n`);
  void stop('error', 1);
});

let created: Awaited<ReturnType<typeof payments.webhookEndpoints.create>>;
run.creating = true;
try {
  created = await payments.webhookEndpoints.create({
    url: deliverTo,
    enabled_events: events as NonNullable<Parameters<typeof payments.webhookEndpoints.create>[0]['enabled_events']>,
    description: `npm run listen (temporary; removed when it stops) pid ${process.pid}`,
  });
} catch (err) {
  server.close();
  fail(`could not register the endpoint (${problem(err)})`);
}
const endpointId = created.id;
run.endpointId = endpointId;
run.creating = false;
const secret = created.secret;
receiver.secret = secret;
if (run.stopping) {
  // A signal arrived while the endpoint was being created: stop() ran without an id; remove it now.
  run.stopping = false;
  void stop('stopped while starting');
}

process.stdout.write(
  `Ready. Workspace ${workspace.name} (${workspace.id}) delivers ${events.join(', ')} to ${deliverTo}` +
    `${forwardTo ? `, forwarded to ${forwardTo}` : ''}.\n` +
    `Signing secret: ${secret}\n` +
    `Endpoint ${endpointId} is removed when you stop with Ctrl-C.\n`,
);
