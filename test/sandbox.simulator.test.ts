// The simulator's clock (runSimulatorStep) under a slow receiver: the steps it claims go out as signed callbacks, a
// fixed number in flight, and one callback that takes long holds up only its own slot. The receiver here is the
// service's own (the lifecycle's notices), wrapped to hold back the first callback until the test lets it go.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runSimulatorStep } from '../src/modules/providers/sandbox.simulator.js';
import type { CallbackHeaders } from '../src/modules/providers/provider.js';
import { createCollectionsAtOnce, FAST_LIFECYCLE, startTestApp, waitFor, type TestApp } from './helpers/harness.js';

let t: TestApp;

before(async () => {
  // No workers: the test runs the initiation sweep and the simulator's step itself.
  t = await startTestApp(FAST_LIFECYCLE);
});

after(async () => {
  await t.close();
});

const statuses = async (ids: string[]): Promise<Map<string, string>> => {
  const { rows } = await t.db.query<{ id: string; status: string }>(
    'SELECT id, status FROM collections WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.status]));
};

test('a callback that hangs holds up only its own: the claim’s other steps are received and applied meanwhile', async () => {
  const count = 100; // more than the callbacks in flight at once (64)
  const ids = await createCollectionsAtOnce(t, t.demoToken, count, '+254712345678');
  // Initiated: each opens its sandbox operation (pending), whose next step (processing) is then due.
  await waitFor(
    'every collection pending',
    async () => {
      await t.services.submitter.sweep();
      const now = await statuses(ids);
      return [...now.values()].every((s) => s === 'pending') && now.size === count ? true : undefined;
    },
    20_000,
  );
  await t.db.query('UPDATE sandbox_operations SET next_at = now() WHERE object_id = ANY($1::uuid[])', [ids]);

  const simulator = t.services.providers.sandbox;
  assert.ok(simulator, 'the sandbox simulator runs in this environment');
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held: string | undefined;
  const received: string[] = [];
  const receiver = {
    receive: async (provider: string, rawBody: string, headers: CallbackHeaders) => {
      const id = (JSON.parse(rawBody) as { merchant_reference: string }).merchant_reference;
      received.push(id);
      if (held === undefined) {
        held = id;
        await gate;
      }
      return t.services.notices.receive(provider, rawBody, headers);
    },
  };
  const lookups = t.services.notices.ownerLookups();
  const step = runSimulatorStep(simulator, receiver, t.app.log);
  try {
    // While the first callback hangs, every other step is received, and each of those collections moves.
    await waitFor(
      'the other 99 collections processing while one callback hangs',
      async () => {
        const now = await statuses(ids);
        return ids.filter((id) => id !== held && now.get(id) === 'processing').length === count - 1 ? true : undefined;
      },
      15_000,
    );
    assert.equal(received.length, count);
    // Their owner lookups, asked for while others were in flight, were read together: few statements for 99 ids.
    const now = t.services.notices.ownerLookups();
    assert.equal(now.keys - lookups.keys, count - 1);
    assert.ok(now.reads - lookups.reads <= 40, `99 owner lookups took ${now.reads - lookups.reads} statements`);
    assert.equal((await statuses([held as string])).get(held as string), 'pending');
  } finally {
    release();
  }
  assert.equal(await step, count);
  assert.equal((await statuses([held as string])).get(held as string), 'processing');
  // Each step delivered is advanced once: the next (successful) is scheduled, none sent twice.
  const { rows } = await t.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM sandbox_operations WHERE object_id = ANY($1::uuid[]) AND next_step = 2',
    [ids],
  );
  assert.equal(rows[0]?.n, count);
});
