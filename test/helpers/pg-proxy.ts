// A TCP proxy in front of PostgreSQL that can lose the answer to one statement: the statement reaches the server and
// runs to its end (committing, outside a transaction), then the client's connection is cut before the server's answer
// reaches it. That is what a failover's fast shutdown does to a commit that was waiting for its synchronous standby
// ("the transaction has already committed locally"): the client cannot tell whether its statement took effect.
import net from 'node:net';

/** The wire protocol's ReadyForQuery message ('Z', length 5): the server is done with what it was sent. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

export interface PgProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url(databaseUrl: string): string;
  /**
   * The next statement whose text holds `marker` runs, and its answer is lost (the connection it came on is cut);
   * resolves, once that has happened, with the server's command tags that were held back (e.g. ['UPDATE 1']).
   */
  loseAnswerTo(marker: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function startPgProxy(databaseUrl: string): Promise<PgProxy> {
  const target = new URL(databaseUrl);
  let armed: { marker: string; done: (tags: string[]) => void } | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let cutting: ((tags: string[]) => void) | undefined;
    let held = Buffer.alloc(0);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    // The statement is known by its text: that of a simple Query, or of the Parse a Bind names (the service prepares a
    // statement once per connection, under a name, and then only binds it).
    const reader = clientMessages();
    const prepared = new Map<string, string>();
    client.on('data', (chunk: Buffer) => {
      for (const message of reader(chunk)) {
        let text: string | undefined;
        if (message.type === 'P') {
          const [name = '', parsed = ''] = cstrings(message.body, 2);
          prepared.set(name, parsed);
        } else if (message.type === 'B') text = prepared.get(cstrings(message.body, 2)[1] ?? '');
        else if (message.type === 'Q') text = cstrings(message.body, 1)[0];
        if (armed && cutting === undefined && text?.includes(armed.marker)) {
          cutting = armed.done;
          armed = undefined;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutting === undefined) {
        client.write(chunk);
        return;
      }
      // Everything the server says about the statement is held back, then the connection is cut.
      held = Buffer.concat([held, chunk]);
      if (held.includes(READY_FOR_QUERY)) {
        end();
        cutting(commandTags(held));
      }
    });
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    loseAnswerTo(marker: string) {
      return new Promise<string[]>((resolve) => (armed = { marker, done: resolve }));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The tags of the CommandComplete messages ('C') in a run of server messages. */
function commandTags(messages: Buffer): string[] {
  const tags: string[] = [];
  for (let at = 0; at + 5 <= messages.length;) {
    const length = messages.readUInt32BE(at + 1);
    if (messages[at] === 0x43)
      tags.push(
        messages
          .subarray(at + 5, at + length)
          .toString('utf8')
          .replace(/\0$/, ''),
      );
    at += 1 + length;
  }
  return tags;
}

/**
 * Reads a client's stream into messages, across chunks: first the untyped start-up message (after any SSL or GSS
 * encryption request, each answered by one byte and followed by another start-up), then typed ones.
 */
function clientMessages(): (chunk: Buffer) => { type: string; body: Buffer }[] {
  let pending = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    const out: { type: string; body: Buffer }[] = [];
    for (;;) {
      if (!started) {
        if (pending.length < 8) return out;
        const length = pending.readUInt32BE(0);
        if (pending.length < length) return out;
        const code = pending.readUInt32BE(4);
        started = code !== 80877103 && code !== 80877104;
        pending = pending.subarray(length);
        continue;
      }
      if (pending.length < 5) return out;
      const length = pending.readUInt32BE(1);
      if (pending.length < 1 + length) return out;
      out.push({ type: String.fromCharCode(pending[0] as number), body: pending.subarray(5, 1 + length) });
      pending = pending.subarray(1 + length);
    }
  };
}

/** The first `n` NUL-terminated strings of a message body. */
function cstrings(body: Buffer, n: number): string[] {
  const out: string[] = [];
  for (let at = 0; out.length < n && at < body.length;) {
    const end = body.indexOf(0, at);
    if (end < 0) break;
    out.push(body.subarray(at, end).toString('utf8'));
    at = end + 1;
  }
  return out;
}
