// A periodic worker job while the database is away: it pauses with a growing pause, says so once, and resumes by
// itself; any other failure is reported and the job keeps its pace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { every, MAX_PAUSE_MS, type JobReport } from '../src/workers/periodic.js';

function recorder() {
  const seen = { failed: 0, paused: 0, resumed: [] as number[] };
  const report: JobReport = {
    failed: () => void (seen.failed += 1),
    paused: () => void (seen.paused += 1),
    resumed: (_name, pausedMs) => void seen.resumed.push(pausedMs),
  };
  return { seen, report };
}

const terminated = (): Error =>
  Object.assign(new Error('terminating connection due to administrator command'), {
    code: '57P01',
  });

test('while the database is away a job backs off (pauses doubling to 2 s), tells it once, and resumes by itself', async () => {
  const { seen, report } = recorder();
  const runs: number[] = [];
  const outageRuns = 5;
  let succeededAt = 0;
  const job = every(
    20,
    'test-job',
    async () => {
      runs.push(Date.now());
      if (runs.length <= outageRuns) throw terminated();
      succeededAt ||= Date.now();
    },
    report,
  );
  const deadline = Date.now() + 15_000;
  while (runs.length < outageRuns + 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await job.stop();

  const gaps = runs.slice(1, outageRuns + 1).map((t, i) => t - (runs[i] as number));
  // At a 20 ms pace, five failing runs would take 100 ms; backing off, the pauses are 250, 500, 1000, 2000 ms.
  assert.ok(gaps[0]! >= 240, `first pause ${gaps[0]} ms`);
  for (let i = 1; i < 4; i++) assert.ok(gaps[i]! >= gaps[i - 1]! * 1.8, `pauses grow: ${gaps.join(', ')}`);
  assert.ok(gaps[4]! <= MAX_PAUSE_MS + 300, `the pause stops growing at ${MAX_PAUSE_MS} ms: ${gaps.join(', ')}`);
  assert.equal(seen.paused, 1, 'the outage is told once');
  assert.equal(seen.failed, 0, 'a database outage is not logged as a failed job');
  assert.equal(seen.resumed.length, 1);
  assert.ok(seen.resumed[0]! >= 3500, `the pause lasted the outage: ${seen.resumed[0]} ms`);
  // Back at its own pace once the database answers.
  const after = runs.slice(outageRuns + 1).map((t, i) => t - (runs[outageRuns + i] as number));
  assert.ok(
    after.every((g) => g < 200),
    `runs at its pace again: ${after.join(', ')}`,
  );
  assert.ok(succeededAt > 0);
});

test('any other failure is reported each time and does not slow the job down', async () => {
  const { seen, report } = recorder();
  let runs = 0;
  const job = every(
    20,
    'test-job',
    async () => {
      runs += 1;
      throw new Error('a bug');
    },
    report,
  );
  await new Promise((r) => setTimeout(r, 400));
  await job.stop();
  assert.ok(runs >= 8, `kept its 20 ms pace: ${runs} runs in 400 ms`);
  assert.equal(seen.failed, runs);
  assert.equal(seen.paused, 0);
});
