// At least once across a crash (deliveries are at-least-once): the service is killed (SIGKILL) while a delivery is in
// flight; the attempt's lease runs out and a fresh process on the same database sends the event again,
// with the same webhook-id, signed so that the `standardwebhooks` package accepts it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, createCollection, request, waitFor, within } from './helpers/harness.js';
import { npmStartArgs } from './helpers/start-command.js';
import { freePort } from '../src/db/embedded.js';

const WEBHOOK_TIMEOUT_MS = 1500;

interface Running {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  exited: Promise<void>;
}

interface Arrival {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What the receiver did with it. */
  answered: 'held' | 200;
}

let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let dataDir = '';
const children: Running[] = [];
const held: http.ServerResponse[] = [];
const arrivals: Arrival[] = [];
let receiver: http.Server | undefined;
let receiverUrl = '';
/** Phase 1: the first request is held open and the service killed; phase 2: everything is answered 200. */
let onFirst: (() => void) | undefined;
let answerAll = false;

/** `npm start` as a child process of its own process group, on the test database. */
async function startService(): Promise<Running> {
  assert.ok(database);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
    WEBHOOK_POLL_MS: '20',
    SANDBOX_STEP_MS: '50',
    WORKER_INTERVAL_MS: '20',
  };
  delete env.TEST_DATABASE_URL;
  delete env.PAYMENTS_ENV;
  delete env.PROVIDERS_FILE;
  delete env.WEBHOOK_RETRY_SCHEDULE;
  const child = spawn(process.execPath, npmStartArgs(), {
    cwd: path.resolve(import.meta.dirname, '..'),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so a kill leaves nothing behind
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const running: Running = { child, baseUrl: `http://127.0.0.1:${port}`, output: () => out, exited };
  children.push(running);
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited early:\n${out}`);
    try {
      const res = await fetch(`${running.baseUrl}/readyz`);
      if (res.status === 200) return running;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service did not become ready within 90 s:\n${out}`);
}

function killGroup(running: Running): void {
  const pid = running.child.pid;
  if (pid === undefined || running.child.exitCode !== null || running.child.signalCode !== null) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      running.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

before(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-crash-'));
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (!answerAll && held.length === 0) {
        // The first request: never answered; the service dies while waiting for it.
        held.push(res);
        arrivals.push({ at: Date.now(), headers: req.headers, body, answered: 'held' });
        onFirst?.();
        return;
      }
      arrivals.push({ at: Date.now(), headers: req.headers, body, answered: 200 });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  receiver.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => receiver?.listen(0, '127.0.0.1', resolve));
  const a = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/hooks`;
});

after(async () => {
  for (const running of children) {
    killGroup(running);
    await within('the service to exit', running.exited, 10_000).catch(() => undefined);
  }
  for (const res of held) res.destroy();
  if (receiver) {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  }
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test(
  'a worker killed in the middle of a delivery: after a restart the event still arrives, same webhook-id, verifiable',
  { timeout: 180_000 },
  async () => {
    const first = await startService();
    const credentials = JSON.parse(await readFile(path.join(dataDir, 'credentials.json'), 'utf8'));
    const token: string = credentials.workspaces[0].integrator.token;
    assert.ok(token, 'credentials.json holds the demo integrator token');

    const registered = await request(first, 'POST', '/v1/webhooks/endpoints', { token, body: { url: receiverUrl } });
    assert.equal(registered.status, 201, registered.text);
    const secret: string = registered.body.secret;
    assert.match(secret, /^whsec_/);

    // Kill the whole process group the moment the first delivery reaches the receiver.
    const firstArrived = new Promise<void>((resolve) => {
      onFirst = () => {
        killGroup(first);
        resolve();
      };
    });
    const created = await createCollection(first, token, {
      customer: { phone_number: '+254712340000' },
      metadata: { order_id: 'crash-1' },
    });
    assert.equal(created.status, 201, created.text);
    const collectionId: string = created.body.collection_id;

    await within('a first delivery to reach the receiver', firstArrived, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${first.output()}`);
    });
    await within('the killed service to exit', first.exited, 10_000);
    assert.equal(first.child.signalCode, 'SIGKILL', 'the service was killed, not stopped cleanly');

    const heldArrival = arrivals.find((a) => a.answered === 'held');
    assert.ok(heldArrival);
    const heldId = heldArrival.headers['webhook-id'];
    assert.equal(typeof heldId, 'string');
    const wh = new Webhook(secret);
    // Even the attempt that never got an answer was properly signed.
    wh.verify(heldArrival.body, heldArrival.headers as Record<string, string>);
    assert.equal(JSON.parse(heldArrival.body).id, heldId, 'webhook-id is the event id');

    // A fresh process on the same database and DATA_DIR; the receiver now answers.
    answerAll = true;
    const second = await startService();
    assert.equal(
      JSON.parse(await readFile(path.join(dataDir, 'credentials.json'), 'utf8')).workspaces[0].integrator.token,
      token,
    );

    // The held delivery's lease (timeout + 5 s) runs out and it is sent again, with the same webhook-id.
    const again = await waitFor(
      'the interrupted event delivered again',
      async () => arrivals.find((a) => a.answered === 200 && a.headers['webhook-id'] === heldId),
      60_000,
    );
    const payload = wh.verify(again.body, again.headers as Record<string, string>) as {
      id: string;
      type: string;
      data: { collection_id?: string };
    };
    assert.equal(payload.id, heldId);
    assert.equal(again.body, heldArrival.body, 'the same event body');
    assert.ok(again.at > heldArrival.at);

    // Eventually every event of the collection has been received (and answered 200), each verifiable.
    await waitFor(
      'the collection to succeed',
      async () =>
        (await request(second, 'GET', `/v1/collections/${collectionId}`, { token })).body?.status === 'successful'
          ? true
          : undefined,
      60_000,
    );
    const events = await request(second, 'GET', `/v1/events?object_id=${collectionId}&limit=100`, { token });
    assert.equal(events.status, 200, events.text);
    const eventIds: string[] = events.body.data.map((e: { id: string }) => e.id);
    const types: string[] = events.body.data.map((e: { type: string }) => e.type);
    assert.ok(
      types.includes('collection.created') && types.includes('collection.successful'),
      `events: ${types.join(', ')}`,
    );
    assert.ok(eventIds.includes(heldId as string));
    await waitFor(
      'every event of the collection received',
      async () => {
        const got = new Set(arrivals.filter((a) => a.answered === 200).map((a) => a.headers['webhook-id']));
        return eventIds.every((id) => got.has(id)) ? true : undefined;
      },
      60_000,
    );
    for (const arrival of arrivals) {
      const body = wh.verify(arrival.body, arrival.headers as Record<string, string>) as {
        id: string;
        data: { collection_id?: string };
      };
      assert.equal(body.id, arrival.headers['webhook-id']);
      assert.equal(body.data.collection_id, collectionId);
    }

    // The delivery log agrees: the interrupted delivery succeeded on a later attempt.
    await waitFor(
      'the interrupted delivery recorded as succeeded',
      async () => {
        const log = await request(second, 'GET', `/v1/events/${heldId}/deliveries`, { token });
        const delivery = log.body?.data?.[0];
        return delivery?.status === 'succeeded' ? delivery : undefined;
      },
      30_000,
    ).then((delivery) => {
      assert.ok(delivery.attempts.some((a: { succeeded: boolean }) => a.succeeded));
      assert.ok(
        Math.max(...delivery.attempts.map((a: { attempt: number }) => a.attempt)) >= 2,
        'the killed attempt counted as one',
      );
    });
  },
);
