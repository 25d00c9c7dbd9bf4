// A rail provider reached over HTTPS: an aggregator (or an adapter in front of an operator's API) that
// speaks our provider protocol. Initiations carry our id as Idempotency-Key, so a retry never prompts the
// payer twice; callbacks are signed as in callback-protocol.ts with the gateway's own secret.
import { Type, type Static } from 'typebox';
import { compileBody } from '../../platform/validation.js';
import { verifyCallback } from './callback-protocol.js';
import {
  ProviderError,
  type CallbackHeaders,
  type CollectionOrder,
  type NoticeObjectType,
  type PayoutOrder,
  type ProviderAck,
  type ProviderNotice,
  type RailProvider,
  type RefundOrder,
} from './provider.js';

/** A gateway's entry in PROVIDERS_FILE. */
export const GatewayEntry = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,39}$' }),
    base_url: Type.String({ format: 'uri' }),
    api_key: Type.String({ minLength: 1 }),
    callback_secret: Type.String({ minLength: 16 }),
    rails: Type.Array(Type.String({ pattern: '^[A-Z]{2}/([a-z][a-z0-9_]*|\\*)$' }), { minItems: 1 }),
  },
  { additionalProperties: false },
);
export type GatewayPlan = Static<typeof GatewayEntry>;

const Answer = Type.Object({
  reference: Type.String({ minLength: 1, maxLength: 200 }),
  status: Type.Enum(['pending', 'processing', 'successful', 'failed', 'reversed']),
  reason: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
});
const validAnswer = compileBody(Answer);

interface GatewayAnswer {
  reference: string;
  status: string;
  reason?: string | null;
}

export class HttpGatewayProvider implements RailProvider {
  readonly name: string;

  constructor(
    private readonly settings: GatewayPlan,
    /** Where the gateway sends its callbacks: PUBLIC_BASE_URL/v1/providers/{name}/callbacks. */
    private readonly callbackUrl: string,
    private readonly timeoutMs = 15_000,
  ) {
    this.name = settings.name;
  }

  async initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    return this.initiate('collections', order.id, {
      market: order.market,
      rail: order.rail,
      amount: order.amount,
      currency: order.currency,
      reference: order.reference,
      customer: order.customer,
      expires_at: order.expiresAt.toISOString(),
    });
  }

  async initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    return this.initiate('refunds', order.id, {
      collection_merchant_reference: order.collectionId,
      collection_reference: order.collectionReference,
      amount: order.amount,
      currency: order.currency,
    });
  }

  async initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    return this.initiate('payouts', order.id, {
      market: order.market,
      rail: order.rail,
      amount: order.amount,
      currency: order.currency,
      reference: order.reference,
      beneficiary: order.beneficiary,
    });
  }

  parseCallback(rawBody: string, headers: CallbackHeaders): ProviderNotice {
    return verifyCallback(this.settings.callback_secret, rawBody, headers);
  }

  /** A gateway keys operations by our object id (`GET /{kind}s/{id}`). */
  findsByOurId(): boolean {
    return true;
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
  ): Promise<Omit<ProviderNotice, 'noticeId'> | undefined> {
    const res = await this.call('GET', `${objectType}s/${encodeURIComponent(objectId)}`, undefined, objectId);
    if (res.status === 404) return undefined;
    const answer = await this.answer(res);
    return {
      objectType,
      objectId,
      reference: answer.reference,
      status: answer.status,
      reason: answer.reason ?? undefined,
    };
  }

  /** Every initiation names our id (`merchant_reference`, also the Idempotency-Key) and where to call back. */
  private async initiate(path: string, id: string, fields: Record<string, unknown>): Promise<ProviderAck> {
    const body = { merchant_reference: id, ...fields, callback_url: this.callbackUrl };
    const res = await this.call('POST', path, body, id);
    // 400 and 422 are the gateway refusing this payment for good: it fails. Anything else that is not a success
    // (401/403 a rotated key, 404 a wrong base_url, 408, 409, 429, 5xx) is ours or transient: retried, then given up.
    if (res.status === 400 || res.status === 422) {
      return { reference: `refused:${id}`, status: 'failed', reason: 'provider_refused' };
    }
    const answer = await this.answer(res);
    return {
      reference: answer.reference,
      status: answer.status === 'failed' ? 'failed' : 'pending',
      reason: answer.reason ?? undefined,
    };
  }

  private async call(method: string, path: string, body: unknown, idempotencyKey: string): Promise<Response> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.settings.api_key}`,
      'idempotency-key': idempotencyKey,
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(new URL(path, `${this.settings.base_url.replace(/\/+$/, '')}/`), {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      throw new ProviderError(`${this.name}: ${method} ${path} failed: ${(err as Error).message}`);
    }
  }

  private async answer(res: Response): Promise<GatewayAnswer> {
    if (!res.ok) throw new ProviderError(`${this.name}: answered ${res.status}`);
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {
      throw new ProviderError(`${this.name}: answered with a body that is not JSON`);
    }
    if (!validAnswer(parsed)) throw new ProviderError(`${this.name}: answered with an unexpected body`);
    return parsed as GatewayAnswer;
  }
}
