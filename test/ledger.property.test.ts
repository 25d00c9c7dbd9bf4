// A randomised run (fast-check) of over 1,000 operations on collections and refunds — creates, provider callbacks (in
// order, out of order, impossible, duplicated, badly signed), sandbox simulations, refunds, idempotent retries, the
// expiry sweep and the submitter — all through the real code paths (HTTP, and the sweep/submitter functions the workers
// call), checked step by step against a model of the contract's collection and refund transitions, and at the end of
// each run against the ledger: verifyLedger() finds nothing, GET /v1/balances equals what the final statuses imply, the
// events of each object are the model's, in strictly increasing time.
//
// One app WITHOUT background workers: nothing moves unless this file moves it, so every answer is
// predictable. Each run uses a workspace of its own. The transition tables are written out here from the
// contract, not imported, so the model is the document's and not the code's. A failure names the seed:
// LEDGER_PROPERTY_SEED=<seed> replays the same operations (expiry timing aside).
//
// The model and the operations are in test/helpers/ledger-model.ts, ledger-operations.ts and ledger-checks.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createWorkspace } from './helpers/harness.js';
import { finalChecks, checkpoint } from './helpers/ledger-checks.js';
import { opArb, Run, type Op } from './helpers/ledger-model.js';
import { apply, startLedgerApp, t } from './helpers/ledger-operations.js';

startLedgerApp();

const RUNS = 5;
const OPS_PER_RUN = 210;

describe('ledger property: a randomised run of the lifecycle', () => {
  it(`${RUNS} runs of ${OPS_PER_RUN} operations end with the ledger sound and the balances the final statuses imply`, async () => {
    const stats = new Map<string, number>();
    let operations = 0;
    let runs = 0;
    const seed = process.env.LEDGER_PROPERTY_SEED;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: OPS_PER_RUN, maxLength: OPS_PER_RUN }), async (ops) => {
        runs += 1;
        const run = new Run(await createWorkspace(t, `property run ${runs}`), stats);
        for (const [i, op] of ops.entries()) {
          try {
            run.trace.push(`#${i} ${await apply(run, op)}`);
            await run.takeInLateRefunds(t.db);
            await checkpoint(run);
          } catch (err) {
            throw new Error(
              `operation #${i} ${JSON.stringify(op)} of run ${runs} failed: ${(err as Error).message}\nlast operations:\n${run.trace.slice(-25).join('\n')}`,
              {
                cause: err,
              },
            );
          }
          operations += 1;
        }
        try {
          await finalChecks(run);
        } catch (err) {
          throw new Error(
            `the end of run ${runs} failed: ${(err as Error).message}\nlast operations:\n${run.trace.slice(-25).join('\n')}`,
            { cause: err },
          );
        }
      }),
      {
        numRuns: RUNS,
        endOnFailure: true,
        ...(seed ? { seed: Number(seed) } : {}),
        // The failing run's own message (with its last operations) and the seed to replay it, rather than the
        // whole counterexample (hundreds of descriptors).
        plugins: [
          () => ({
            onAllRunsComplete: (details: fc.RunDetails<[Op[]]>) => {
              if (!details.failed) return;
              const cause =
                details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
              throw new Error(`property failed (replay with LEDGER_PROPERTY_SEED=${details.seed}): ${cause}`, {
                cause: details.errorInstance,
              });
            },
          }),
        ],
      },
    );

    console.log(`${operations} operations in ${runs} runs`);
    for (const [what, n] of [...stats.entries()].sort()) console.log(`  ${what}: ${n}`);
    assert.ok(operations >= 1000, `only ${operations} operations ran`);
    // The run exercised what it claims to: every kind of answer came up.
    for (const what of [
      'create: 201',
      'collection notice: applied',
      'collection notice: duplicate',
      'collection notice: refused',
      'refund notice: applied',
      'refund notice: refused',
      'resend notice (same): duplicate',
      'refund: 201',
      'refund: 409 collection_not_refundable',
      'simulate collection: 200 moved',
      'simulate collection: 409',
      'simulate refund: 200 moved',
      'retry create: replayed',
      'retry refund: replayed',
      'submit collection: submitted',
      'submit refund: submitted',
      'expiry: expired',
    ]) {
      assert.ok((stats.get(what) ?? 0) > 0, `the run never produced "${what}"`);
    }
  });
});
