// The TypeScript client's sandbox clock calls (packages/sdk: `sandbox.clock`, `sandbox.advanceClock`) against a started
// service: typed answers, the move's Idempotency-Key (a retry with the same key moves the clock once), and a refused
// duration as a PaymentsError with its code and field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Payments, PaymentsError, type SandboxClock } from '../packages/sdk/src/index.js';
import { createWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t?.close());

describe('the sandbox clock through the SDK', () => {
  it('reads the clock, moves it, and a repeated call with the same key moves it once', async () => {
    const ws = await createWorkspace(t, 'sdk-clock');
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const start: SandboxClock = await payments.sandbox.clock();
    assert.equal(start.workspace_id, ws.id);
    assert.equal(start.offset_seconds, 0);

    const moved = await payments.sandbox.advanceClock({ seconds: 900 }, { idempotencyKey: 'sdk-clock-move-1' });
    assert.equal(moved.offset_seconds, 900);
    assert.equal(Date.parse(moved.now) - Date.parse(moved.server_time), 900_000);
    assert.ok(moved.moved, 'a move says what it moved');
    const again = await payments.sandbox.advanceClock({ seconds: 900 }, { idempotencyKey: 'sdk-clock-move-1' });
    assert.deepEqual(again, moved);
    assert.equal((await payments.sandbox.clock()).offset_seconds, 900);
    // Without a key of the caller's, each call is a move of its own (the SDK gives each a fresh key).
    assert.equal((await payments.sandbox.advanceClock({ seconds: 100 })).offset_seconds, 1000);
  });

  it('a duration past the cap is a PaymentsError 400 validation_failed naming the field', async () => {
    const payments = new Payments({ token: t.demoToken, baseUrl: t.baseUrl });
    await assert.rejects(
      () => payments.sandbox.advanceClock({ seconds: 30 * 86_400 + 1 }),
      (err: unknown) =>
        err instanceof PaymentsError &&
        err.status === 400 &&
        err.code === 'validation_failed' &&
        (err.problem.errors ?? []).some((e) => e.field === 'seconds'),
    );
    assert.equal((await payments.sandbox.clock()).offset_seconds, 0);
  });
});
