// A local webhook receiver for tests: a node:http server on 127.0.0.1 (any free port) that records every
// request to its own path ({method, path, headers, body, at}) and answers as the test's handler says, per request.
// The path is random, `/hook/<12 hex>`: a port is reused within seconds by the test files running in parallel, and
// another process's app may still retry deliveries to an endpoint of its own at this port. Requests to other paths
// are answered 200 (that app stops retrying; a browser's /favicon.ico gets no error) and are not recorded, so a test
// never reads another's delivery (one signed with that app's secrets).
import { randomBytes } from 'node:crypto';
import http from 'node:http';

export interface ReceivedRequest {
  method: string;
  /** Path and query of the request URL. */
  path: string;
  /** Lowercase header names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  body: string;
  /** Date.now() when the whole body had arrived. */
  at: number;
}

export interface Reply {
  /** 200 unless said otherwise. */
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Waits this long before answering. */
  delayMs?: number;
  /** Never answers (the connection stays open until the client gives up or the receiver closes). */
  hang?: boolean;
}

/** Decides the answer to one request; `index` is its position in `requests` (0-based). */
export type ReplyHandler = (req: ReceivedRequest, index: number) => Reply | undefined | Promise<Reply | undefined>;

export interface Receiver {
  /** Base URL with the receiver's own path, e.g. http://127.0.0.1:12345/hook/0a1b2c3d4e5f; paths under it are its own too. */
  url: string;
  /** The receiver's own path, e.g. /hook/0a1b2c3d4e5f. */
  path: string;
  port: number;
  /** Every request received on its own path (or under it), in order of arrival. */
  requests: ReceivedRequest[];
  /** Replaces the handler for the requests that arrive from now on. */
  setHandler(handler: ReplyHandler): void;
  close(): Promise<void>;
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export async function startReceiver(handler: ReplyHandler = () => ({ status: 200 })): Promise<Receiver> {
  let current = handler;
  const requests: ReceivedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const own = `/hook/${randomBytes(6).toString('hex')}`;
  const server = http.createServer((req, res) => {
    const pathname = (req.url ?? '').split('?')[0] ?? '';
    if (pathname !== own && !pathname.startsWith(`${own}/`)) {
      req.resume();
      res.writeHead(200).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: flatHeaders(req.headers),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const index = requests.push(received) - 1;
      void (async () => {
        let reply: Reply;
        try {
          reply = (await current(received, index)) ?? { status: 200 };
        } catch (err) {
          reply = { status: 599, body: `receiver handler threw: ${(err as Error).message}` };
        }
        if (reply.hang) return;
        const answer = (): void => {
          if (res.destroyed) return;
          res.writeHead(reply.status ?? 200, reply.headers ?? {});
          res.end(reply.body ?? '');
        };
        if (reply.delayMs && reply.delayMs > 0) {
          const timer = setTimeout(() => {
            timers.delete(timer);
            answer();
          }, reply.delayMs);
          timers.add(timer);
        } else answer();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}${own}`,
    path: own,
    port,
    requests,
    setHandler(h) {
      current = h;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
