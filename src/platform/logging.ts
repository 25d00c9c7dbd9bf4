// Log settings: JSON lines, with tokens, secrets and phone numbers masked before they are written.
import type { FastifyServerOptions } from 'fastify';

/** +254712345678 → +254******678: enough to recognise, not enough to call. */
export function maskPhone(value: string): string {
  if (value.length <= 7) return '*'.repeat(value.length);
  return value.slice(0, 4) + '*'.repeat(value.length - 7) + value.slice(-3);
}

/** Paths never carry secrets today, but checkout tokens will be path segments: mask them in logs. */
export function maskUrl(url: string): string {
  return url.replace(/(\/(?:by-token|checkout)\/)[^/?#]+/g, '$1[token]');
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
      req(req: { method: string; url: string; ip?: string; id?: string }) {
        return { method: req.method, url: maskUrl(req.url), remote_address: req.ip };
      },
    },
  };
}
