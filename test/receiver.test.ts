// The test webhook receiver keeps to its own path: a port is reused within seconds by the test files running in
// parallel, and another process's app may still retry deliveries to an old endpoint at the same port.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startReceiver } from './helpers/receiver.js';

describe('the test webhook receiver', () => {
  it("records what comes to its own path and under it, and leaves another endpoint's delivery at its port out", async () => {
    const receiver = await startReceiver(() => ({ status: 202 }));
    try {
      const post = (url: string) => fetch(url, { method: 'POST', body: '{"id":"evt"}' });
      const stray = await post(`http://127.0.0.1:${receiver.port}/hook`);
      assert.equal(stray.status, 200, 'the stray delivery is answered, so its sender stops retrying');
      assert.equal((await post(`http://127.0.0.1:${receiver.port}${receiver.path}x`)).status, 200, 'a longer name');
      assert.equal((await post(receiver.url)).status, 202);
      assert.equal((await post(`${receiver.url}/sub?q=1`)).status, 202);
      assert.deepEqual(
        receiver.requests.map((r) => r.path),
        [receiver.path, `${receiver.path}/sub?q=1`],
      );
      assert.match(receiver.path, /^\/hook\/[0-9a-f]{12}$/);
    } finally {
      await receiver.close();
    }
  });
});
