// What the HTTP layer answers before or around the routes: a wrong method on a known path is 405
// with Allow; what Node's parser refuses (bad framing, headers too large, a request that stalls) is a problem
// document with X-Request-Id and API-Version, and the connection closes; refused tokens (only) are limited per address.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertProblem, request, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp({ REQUEST_TIMEOUT_MS: '1000', AUTH_FAILURES_PER_MINUTE: '5', TRUST_PROXY: 'true' });
});
after(async () => t?.close());

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the server closing the connection. */
  closedAfterMs: number;
}

/** Sends `chunks` as they are on a fresh connection (waiting `pauseMs` after each) and reads until the server closes. */
function raw(chunks: string[], pauseMs = 0): Promise<RawAnswer> {
  const { port } = new URL(t.baseUrl);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = new Map(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, closedAfterMs: Date.now() - started });
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
    });
  });
}

function assertRawProblem(answer: RawAnswer, status: number, code: string): void {
  assert.equal(answer.status, status, JSON.stringify([...answer.headers]) + answer.body);
  assert.equal(answer.headers.get('content-type'), 'application/problem+json');
  assert.match(answer.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(answer.headers.get('api-version'));
  assert.equal(answer.headers.get('connection'), 'close');
  const problem = JSON.parse(answer.body) as { status: number; code: string; request_id?: string };
  assert.equal(problem.status, status);
  assert.equal(problem.code, code);
}

describe('a wrong method on a known path', () => {
  it('is 405 method_not_allowed with Allow naming the methods the path has; an unknown path is still 404', async () => {
    const del = await request(t, 'DELETE', '/v1/collections');
    assertProblem(del, 405, 'method_not_allowed');
    assert.equal(del.headers.get('allow'), 'GET, HEAD');
    assert.ok(del.headers.get('x-request-id'));
    const put = await request(t, 'PUT', '/v1/refunds/01890a5d-ac96-774b-bcce-b302099a8057');
    assertProblem(put, 405, 'method_not_allowed');
    assert.equal(put.headers.get('allow'), 'GET, HEAD');
    const get = await request(t, 'GET', '/v1/collections/KE/rails/mpesa');
    assertProblem(get, 405, 'method_not_allowed');
    assert.equal(get.headers.get('allow'), 'POST');
    assertProblem(await request(t, 'DELETE', '/v1/nothing-here'), 404, 'not_found');
  });
});

describe("what Node's HTTP parser refuses", () => {
  it('headers over 16 KiB: 431 headers_too_large, as a problem document, and the connection closes', async () => {
    const answer = await raw([`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    assertRawProblem(answer, 431, 'headers_too_large');
  });

  it('bad framing: 400 validation_failed, as a problem document, and the connection closes', async () => {
    const answer = await raw(['POST /v1/collections HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n']);
    assertRawProblem(answer, 400, 'validation_failed');
  });

  it('a body that stalls: 408 request_timeout once REQUEST_TIMEOUT_MS has passed, and the connection closes', async () => {
    const answer = await raw(
      [
        'POST /v1/collections/KE/rails/mpesa HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          `Authorization: Bearer ${t.demoToken}\r\nIdempotency-Key: stall-1\r\nContent-Length: 100\r\n\r\n`,
        '{"amount": 1',
      ],
      50,
    );
    assertRawProblem(answer, 408, 'request_timeout');
    // REQUEST_TIMEOUT_MS 1000, checked every second: within about 2 s, never the 30 s default.
    assert.ok(answer.closedAfterMs < 4000, `closed after ${answer.closedAfterMs} ms`);
  });
});

describe('refused tokens, per client address', () => {
  const from = (address: string) => ({ 'x-forwarded-for': address });

  it('past AUTH_FAILURES_PER_MINUTE the refused tokens of an address get 429 with Retry-After; its good tokens and other addresses do not', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await request(t, 'GET', '/v1/collections', { token: `forged-${i}`, headers: from('198.51.100.7') });
      assertProblem(res, 401, 'unauthorized');
    }
    const limited = await request(t, 'GET', '/v1/collections', { token: 'forged-6', headers: from('198.51.100.7') });
    assertProblem(limited, 429, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    // A good token from that address is served as usual (a signed token cannot be guessed, so this tells nothing),
    // and the address's refused tokens are still limited after it (test/auth.refused-tokens.test.ts: the flood).
    const good = await request(t, 'GET', '/v1/collections', { token: t.demoToken, headers: from('198.51.100.7') });
    assert.equal(good.status, 200, good.text);
    const again = await request(t, 'GET', '/v1/collections', { token: 'forged-7', headers: from('198.51.100.7') });
    assertProblem(again, 429, 'rate_limited');
    // No token at all is not a refused token; and another address is not limited.
    assertProblem(await request(t, 'GET', '/v1/collections', { headers: from('198.51.100.7') }), 401, 'unauthorized');
    const other = await request(t, 'GET', '/v1/collections', { token: t.demoToken, headers: from('203.0.113.9') });
    assert.equal(other.status, 200, other.text);
  });
});
