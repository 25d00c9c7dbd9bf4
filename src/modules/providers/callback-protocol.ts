// The callback protocol our providers speak (the sandbox simulator and the HTTP gateway alike): a JSON body
// signed with HMAC-SHA256 over "timestamp.body", sent as `Provider-Signature: t=<unix seconds>,v1=<hex>`.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { UUID_PATTERN } from '../../platform/ids.js';
import { Type, type Static } from 'typebox';
import { ApiError } from '../../platform/errors.js';
import { compileBody, fieldErrors } from '../../platform/validation.js';
import { CallbackRejected, NOTICE_OBJECT_TYPES, type CallbackHeaders, type ProviderNotice } from './provider.js';

export const SIGNATURE_HEADER = 'provider-signature';
/** A callback signed longer ago than this is refused, so a captured one cannot be replayed later. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export const CallbackBody = Type.Object(
  {
    notice_id: Type.String({
      minLength: 1,
      maxLength: 200,
      description: "The provider's id of this notice; the same id again is a duplicate.",
    }),
    object_type: Type.Enum(NOTICE_OBJECT_TYPES, { description: 'What the notice is about.' }),
    merchant_reference: Type.String({
      format: 'uuid',
      pattern: UUID_PATTERN,
      description: 'Our id of the collection or refund.',
    }),
    reference: Type.String({ minLength: 1, maxLength: 200, description: "The provider's reference." }),
    status: Type.Enum(['pending', 'processing', 'successful', 'failed', 'reversed'], {
      description: 'The status the provider reports. Collections: all five; refunds: pending, successful, failed.',
    }),
    reason: Type.Optional(
      Type.Union([Type.String({ maxLength: 200 }), Type.Null()], {
        description: 'For failed: why (payer_declined, insufficient_funds, …).',
      }),
    ),
    occurred_at: Type.String({ format: 'date-time', description: 'When it happened at the provider.' }),
  },
  { additionalProperties: false },
);
export type CallbackBody = Static<typeof CallbackBody>;
const validateBody = compileBody(CallbackBody);

function hmac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

export function signCallback(secret: string, body: string, now = Date.now()): Record<string, string> {
  const t = Math.floor(now / 1000);
  return { [SIGNATURE_HEADER]: `t=${t},v1=${hmac(secret, t, body)}`, 'content-type': 'application/json' };
}

export function verifyCallback(
  secret: string,
  rawBody: string,
  headers: CallbackHeaders,
  now = Date.now(),
): ProviderNotice {
  const header = headers[SIGNATURE_HEADER];
  if (typeof header !== 'string') throw new CallbackRejected(`The callback has no ${SIGNATURE_HEADER} header.`);
  const parts = new Map(
    header.split(',').map((p) => [p.slice(0, p.indexOf('=')).trim(), p.slice(p.indexOf('=') + 1).trim()] as const),
  );
  const t = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isSafeInteger(t) || !/^[0-9a-f]{64}$/.test(given))
    throw new CallbackRejected('The callback signature is malformed.');
  if (Math.abs(now / 1000 - t) > SIGNATURE_TOLERANCE_SECONDS)
    throw new CallbackRejected('The callback signature is too old (or from the future).');
  const expected = Buffer.from(hmac(secret, t, rawBody), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex')))
    throw new CallbackRejected('The callback signature does not match.');
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new ApiError('invalid_json', 'The callback body is not JSON.');
  }
  if (!validateBody(body)) {
    const problems = fieldErrors(validateBody.errors).map((e) => `${e.field} ${e.message}`);
    throw new ApiError('validation_failed', `The callback body is not a provider notice: ${problems.join('; ')}.`);
  }
  const notice = body as CallbackBody;
  return {
    noticeId: notice.notice_id,
    objectType: notice.object_type,
    objectId: notice.merchant_reference,
    reference: notice.reference,
    status: notice.status,
    reason: notice.reason ?? undefined,
  };
}
