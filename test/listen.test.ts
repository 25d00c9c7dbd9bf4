// `npm run listen`: a real child process against a real service, with the forward target verifying what it gets.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  request,
  startTestApp,
  waitFor,
  type TestApp,
} from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

interface Listener {
  child: ChildProcessWithoutNullStreams;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

function listen(args: string[], env: Record<string, string> = {}): Listener {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/listen.ts', ...args], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...process.env, PAYMENTS_API_KEY: '', PAYMENTS_BASE_URL: '', ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

describe('npm run listen', () => {
  let t: TestApp;
  let forward: Receiver;
  let forwardUrl = '';

  before(async () => {
    t = await startTestApp({ ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20' }, { workers: true });
    forward = await startReceiver();
    forwardUrl = forward.url;
  });
  after(async () => {
    await forward.close();
    await t.close();
  });

  it('registers a temporary endpoint, prints and forwards each event verified, and removes the endpoint on Ctrl-C', async () => {
    const ws = await createWorkspace(t, 'listen-ws');
    const l = listen(['--base-url', t.baseUrl, '--forward-to', forwardUrl], { PAYMENTS_API_KEY: ws.token });
    try {
      await waitFor('the ready line', async () => (l.out().includes('Signing secret:') ? true : undefined), 20_000);
      const secret = /Signing secret: (whsec_\S+)/.exec(l.out())?.[1] ?? '';
      const endpoints = await request(t, 'GET', '/v1/webhooks/endpoints', { token: ws.token });
      assert.equal(endpoints.body.data.length, 1);
      assert.match(endpoints.body.data[0].url, /^http:\/\/127\.0\.0\.1:\d+\/$/);

      const created = await createCollection(t, ws.token, { customer: { phone_number: '+254712340000' } });
      assert.equal(created.status, 201);
      const id = created.body.collection_id as string;
      await waitFor(
        'collection.successful printed',
        async () => (l.out().includes('collection.successful') ? true : undefined),
        20_000,
      );
      for (const type of [
        'collection.created',
        'collection.pending',
        'collection.processing',
        'collection.successful',
      ]) {
        assert.match(
          l.out(),
          new RegExp(`${type.replace('.', '\\.')}\\s+\\S+\\s+${id}\\s+→ ${forwardUrl.replace(/[/.]/g, '\\$&')} 200`),
        );
      }
      // The forward target gets the service's body and signature unchanged: it verifies with the printed secret.
      await waitFor('four forwarded', async () => (forward.requests.length >= 4 ? true : undefined));
      const wh = new Webhook(secret);
      const types = forward.requests.map((f) => (wh.verify(f.body, f.headers) as { type: string }).type);
      assert.deepEqual(types.sort(), [
        'collection.created',
        'collection.pending',
        'collection.processing',
        'collection.successful',
      ]);

      l.child.kill('SIGINT');
      assert.equal(await l.exited, 0, l.err());
      assert.match(l.out(), /endpoint \S+ removed/);
      const after_ = await request(t, 'GET', '/v1/webhooks/endpoints', { token: ws.token });
      assert.deepEqual(after_.body.data, []);
    } finally {
      l.child.kill('SIGKILL');
    }
  });

  it('passes a failing forward target on, so the service retries it', async () => {
    const ws = await createWorkspace(t, 'listen-fail');
    const l = listen(
      ['--base-url', t.baseUrl, '--forward-to', 'http://127.0.0.1:9/unreachable', '--events', 'collection.created'],
      { PAYMENTS_API_KEY: ws.token },
    );
    try {
      await waitFor('the ready line', async () => (l.out().includes('Signing secret:') ? true : undefined), 20_000);
      const created = await createCollection(t, ws.token);
      await waitFor('the forward failure printed', async () => (l.out().includes('failed') ? true : undefined), 20_000);
      const events = await request(
        t,
        'GET',
        `/v1/events?object_id=${created.body.collection_id}&type=collection.created`,
        { token: ws.token },
      );
      assert.equal(events.body.data.length, 1);
      const deliveries = await waitFor('a logged 502', async () => {
        const res = await request(t, 'GET', `/v1/events/${events.body.data[0].id}/deliveries`, { token: ws.token });
        return res.body.data[0]?.attempts[0]?.status_code === 502 ? res.body.data : undefined;
      });
      assert.equal(deliveries[0].attempts[0].succeeded, false);
      await waitFor('the collection to succeed', async () => {
        const res = await request(t, 'GET', `/v1/collections/${created.body.collection_id}`, { token: ws.token });
        return res.body.status === 'successful' ? true : undefined;
      });
      assert.doesNotMatch(l.out(), /collection\.(pending|processing|successful)/, 'only the subscribed type arrives');
      l.child.kill('SIGTERM');
      assert.equal(await l.exited, 0);
    } finally {
      l.child.kill('SIGKILL');
    }
  });

  it('refuses to start without a key, with a bad key, or with an unknown event type', async () => {
    const none = listen(['--base-url', t.baseUrl]);
    assert.equal(await none.exited, 2);
    assert.match(none.err(), /an API key is needed/);
    const bad = listen(['--base-url', t.baseUrl, '--api-key', 'not-a-token']);
    assert.equal(await bad.exited, 2);
    assert.match(bad.err(), /refused the API key \(401 unauthorized/);
    const typo = listen(['--base-url', t.baseUrl, '--api-key', t.demoToken, '--events', 'collection.succeeded']);
    assert.equal(await typo.exited, 2);
    assert.match(typo.err(), /unknown event type collection\.succeeded/);
  });
});
