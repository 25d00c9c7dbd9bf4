// The service's settings and the create request that `npm run bench` (bench/run.ts) and `npm run bench:tail` both use.
import type { LoadOptions } from './load.js';
import type { RunningService } from './service.js';

// The sandbox simulator's steps 100 ms apart (2 s by default) so that (i) measures the service's work rather than the
// simulator's pacing. Nothing else is stepped: (a)'s payer never answers, so its collections have no next step.
export const SERVICE_ENV = { SANDBOX_STEP_MS: '100' };

export const CREATE_PATH = '/v1/collections/KE/rails/mpesa';
export const LIST_PATH = '/v1/collections?limit=100';
// A payer number ending 0003: the sandbox accepts the prompt and the payer never answers (it would expire after the
// rail's 10 minutes), as a real provider leaves a collection pending until the payer acts. Each create costs its
// submission too, and no later step spills into the next measurement.
export const CREATE_BODY = JSON.stringify({
  amount: 1500,
  currency: 'KES',
  reference: 'bench-order-42',
  customer: { phone_number: '+254712340003' },
  metadata: { order_id: '42', cart: { items: 2 } },
});

/** (a) and (g)'s load: a create with a fresh Idempotency-Key each, as the demo workspace, for `seconds`. */
export function createLoad(
  service: Pick<RunningService, 'url' | 'demoToken'>,
  connections: number,
  seconds: number,
): LoadOptions {
  return {
    url: `${service.url}${CREATE_PATH}`,
    method: 'POST',
    headers: { authorization: `Bearer ${service.demoToken}`, 'content-type': 'application/json' },
    body: CREATE_BODY,
    freshKey: true,
    connections,
    seconds,
    expect: 201,
    // At the maximum rate the service refuses what it could not prompt in time (503 overloaded): counted, not failed.
    pushedBack: 503,
  };
}
