// Log settings: JSON lines (readable lines instead when stdout is a terminal), with tokens, secrets and phone
// numbers masked before they are written.
import type { FastifyServerOptions } from 'fastify';
import pretty from 'pino-pretty';

/** Where logs go: a terminal gets readable lines; anything else (a file, a collector) gets JSON on stdout. */
export function logStream(): NodeJS.WritableStream | undefined {
  if (!process.stdout.isTTY) return undefined;
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
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
  const stream = logStream();
  return {
    level,
    ...(stream ? { stream } : {}),
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
