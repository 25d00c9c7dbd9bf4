// The simulator's clock: sends each due step of each sandbox operation as a signed callback, through the
// same receiving path a real provider's callback takes.
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../../db/errors.js';
import { ApiError } from '../../platform/errors.js';
import type { CallbackHeaders } from './provider.js';
import type { DueOperation, SandboxProvider } from './sandbox.provider.js';

/** Where a signed callback is received (the lifecycle's notices): the path a real provider's callback takes. */
export interface CallbackReceiver {
  receive(providerName: string, rawBody: string, headers: CallbackHeaders): Promise<unknown>;
}

/** How long a claimed step stays with one worker before another may send it again. */
const LEASE_MS = 10_000;
const BATCH = 200;
/** Callbacks sent at once: the lifecycle applies the notices of those in flight together, many to a commit. */
const PARALLEL = 64;

/** Sends every step that is due; returns how many were sent. */
export async function runSimulatorStep(
  simulator: SandboxProvider,
  notices: CallbackReceiver,
  log: FastifyBaseLogger,
): Promise<number> {
  let sent = 0;
  for (;;) {
    const due = await simulator.claimDue(BATCH, LEASE_MS);
    // PARALLEL callbacks in flight at a time, each next one sent as soon as one is answered: a slow one holds up only
    // its own slot, never the rest of the claim.
    const delivered: DueOperation[] = [];
    let next = 0;
    const sender = async () => {
      try {
        for (let op = due[next++]; op !== undefined; op = due[next++])
          if (await send(simulator, notices, log, op)) delivered.push(op);
      } catch (err) {
        next = due.length; // the database is away: the others send nothing more either
        throw err;
      }
    };
    // All settle before a failure is thrown: a stop waits for this run, so none may still be sending after it.
    const senders = await Promise.allSettled(Array.from({ length: Math.min(PARALLEL, due.length) }, sender));
    const failed = senders.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    await simulator.advance(delivered);
    sent += due.length;
    if (due.length < BATCH) return sent;
  }
}

/** Whether the step is done with (delivered, or refused for good). */
async function send(
  simulator: SandboxProvider,
  notices: CallbackReceiver,
  log: FastifyBaseLogger,
  op: DueOperation,
): Promise<boolean> {
  const { body, headers } = simulator.callbackFor(op);
  try {
    await notices.receive(simulator.name, body, headers);
  } catch (err) {
    // The database is away: the whole run stops (the periodic job pauses and says so once); the lease brings it back.
    if (isDatabaseUnavailable(err)) throw err;
    // Refused for good (the object is unknown): move on. Anything else: the lease runs out and the step is sent again.
    if (!(err instanceof ApiError) || err.status >= 500) {
      log.warn({ err, object_id: op.object_id }, 'sandbox callback not delivered; will retry');
      return false;
    }
    log.warn({ object_id: op.object_id, code: err.code }, 'sandbox callback rejected');
  }
  return true;
}
