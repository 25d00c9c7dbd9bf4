// Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` carries
// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, once per secret in use, separated by spaces.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: whsec_ and 32 random bytes in base64, as Standard Webhooks libraries expect. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of one delivery attempt; every secret still in use signs it. */
export function signedHeaders(secrets: readonly string[], id: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, id, timestamp, body)).join(' '),
  };
}
