// The simulator's clock: sends each due step of each sandbox operation as a signed callback, through the
// same receiving path a real provider's callback takes.
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import type { ProviderNotices } from './notices.service.js';
import type { DueOperation, SandboxProvider } from './sandbox.provider.js';

/** How long a claimed step stays with one worker before another may send it again. */
const LEASE_MS = 10_000;
const BATCH = 200;
const PARALLEL = 8;

/** Sends every step that is due; returns how many were sent. */
export async function runSimulatorStep(simulator: SandboxProvider, notices: ProviderNotices, log: FastifyBaseLogger): Promise<number> {
  let sent = 0;
  for (;;) {
    const due = await simulator.claimDue(BATCH, LEASE_MS);
    for (let i = 0; i < due.length; i += PARALLEL) {
      await Promise.all(due.slice(i, i + PARALLEL).map((op) => send(simulator, notices, log, op)));
    }
    sent += due.length;
    if (due.length < BATCH) return sent;
  }
}

async function send(simulator: SandboxProvider, notices: ProviderNotices, log: FastifyBaseLogger, op: DueOperation): Promise<void> {
  const { body, headers } = simulator.callbackFor(op);
  try {
    await notices.receive(simulator.name, body, headers);
  } catch (err) {
    // Refused for good (the object is unknown): move on. Anything else: the lease runs out and the step is sent again.
    if (!(err instanceof ApiError) || err.status >= 500) {
      log.warn({ err, object_id: op.object_id }, 'sandbox callback not delivered; will retry');
      return;
    }
    log.warn({ object_id: op.object_id, code: err.code }, 'sandbox callback rejected');
  }
  await simulator.advance(op);
}
