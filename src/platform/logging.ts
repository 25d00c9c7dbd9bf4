// Log settings: JSON lines (readable lines instead when stdout is a terminal), with tokens, secrets and phone
// numbers masked before they are written.
import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import pretty from 'pino-pretty';

let stdout: ReturnType<typeof pino.destination> | undefined;
let closed: Promise<void> | undefined;

/** Lines queued and not yet written beyond which new ones are dropped (a log reader that stopped reading). */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;

/**
 * Where logs go: a terminal gets readable lines; anything else (a file, a collector) gets JSON on stdout, written
 * asynchronously. pino's default writes each line with a blocking write on the event loop: two per request, and
 * one that waits on the disk (a file system's journal, a full pipe) holds up every request in flight meanwhile
 * (`npm run bench:tail` found such writes in the slowest creates; bench/README.md). Here the writes go to libuv's
 * threads, lines queued meanwhile going in the next write, in order. A process that exits on purpose writes what is
 * queued first (`closeLogs`). Up to MAX_QUEUED_BYTES wait for a reader that has stopped; lines beyond are dropped,
 * rather than the service stopping for its log, or growing without bound.
 */
export function logStream(): NodeJS.WritableStream | pino.DestinationStream {
  if (process.stdout.isTTY)
    return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
  return (stdout ??= pino.destination({ dest: 1, sync: false, maxLength: MAX_QUEUED_BYTES }));
}

/**
 * Writes every queued line and waits until it is written (at most `timeoutMs`): for a process about to exit on
 * purpose. pino's own flush at exit writes only when no write is under way, so a line whose write a full pipe
 * refused (to be retried) would be lost, and a line cut in half. Logging after this is not written.
 */
export function closeLogs(timeoutMs = 5000): Promise<void> {
  const stream = stdout;
  if (stream === undefined) return Promise.resolve();
  // Ended once; each caller waits at most its own `timeoutMs` for it (the forced exit less than a clean stop).
  closed ??= new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.end();
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  return Promise.race([closed, timeout]).finally(() => clearTimeout(timer));
}

/** +254712345678 → +254******678: enough to recognise, not enough to call. */
export function maskPhone(value: string): string {
  if (value.length <= 7) return '*'.repeat(value.length);
  return value.slice(0, 4) + '*'.repeat(value.length - 7) + value.slice(-3);
}

/** Checkout tokens and operator connectors' callback tokens are path segments: masked in logs. */
export function maskUrl(url: string): string {
  return url
    .replace(/(\/by-token\/)[^/?#]+/, '$1[token]')
    .replace(/^(\/checkout\/)[^/?#]+/, '$1[token]')
    .replace(/(\/v1\/providers\/[^/?#]+\/callbacks\/)[^/?#]+/, '$1[token]');
}

function censor(value: unknown, path: string[]): unknown {
  const last = path[path.length - 1];
  if (last === 'phone_number' && typeof value === 'string') return maskPhone(value);
  return '[redacted]';
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  if (level === 'silent') return false;
  return {
    level,
    stream: logStream(),
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'token',
        '*.token',
        'secret',
        '*.secret',
        'phone_number',
        '*.phone_number',
        '*.*.phone_number',
      ],
      censor,
    },
    serializers: {
      // Only these three fields of a request are logged: never its headers (tokens) or body (phones).
      req(req: { method?: string; url?: string; ip?: string }) {
        return {
          method: req.method,
          url: typeof req.url === 'string' ? maskUrl(req.url) : undefined,
          remote_address: req.ip,
        };
      },
    },
  };
}
