// The rail provider interface: every rail (mobile money, bank transfer) is run by one provider: the sandbox
// simulator, an HTTP gateway speaking our own signed protocol, or an operator connector speaking the operator's
// own API (M-Pesa Daraja, MTN MoMo, Airtel Money), whose unsigned callbacks are confirmed by a status query.
import { ApiError } from '../../platform/errors.js';

export interface CollectionOrder {
  id: string;
  workspaceId: string;
  market: string;
  rail: string;
  amount: number;
  currency: string;
  reference: string;
  customer: Record<string, string>;
  expiresAt: Date;
}

export interface RefundOrder {
  id: string;
  workspaceId: string;
  collectionId: string;
  /** The provider's reference of the collection being refunded. */
  collectionReference: string | null;
  /** The operator's receipt of the collection being refunded (an M-Pesa reversal names it). */
  collectionReceipt: string | null;
  amount: number;
  currency: string;
}

export interface PayoutOrder {
  id: string;
  workspaceId: string;
  market: string;
  rail: string;
  /** What the recipient receives, minor units of `currency`. */
  amount: number;
  currency: string;
  reference: string;
  beneficiary: { name: string; phone_number: string | null; bank_code: string | null; account_number: string | null };
}

/**
 * The provider's synchronous answer to an initiation: accepted (the payer is prompted), refused at once, or, for
 * an operator whose refunds or payouts complete within the call (Airtel Money), done. `reference` is undefined
 * only when the operator's answer never came and it has no idempotency key to ask again with (a Daraja STK push
 * that timed out): the operation then waits for its callback.
 */
export interface ProviderAck {
  reference: string | undefined;
  status: 'pending' | 'failed' | 'successful';
  reason?: string | undefined;
  receipt?: string | undefined;
  /**
   * For a collection on a redirect rail: the operator's page the payer opens (Wave's launch URL, Orange Money's
   * payment page), which becomes the collection's `payment_instruction`.
   */
  redirectUrl?: string | undefined;
}

export const NOTICE_OBJECT_TYPES = ['collection', 'refund', 'payout'] as const;
export type NoticeObjectType = (typeof NOTICE_OBJECT_TYPES)[number];

/** What a provider reports later, by callback or when asked. */
export interface ProviderNotice {
  /** The provider's id of this notice: a notice received twice is applied once. */
  noticeId: string;
  objectType: NoticeObjectType;
  /** Our id of the collection, refund or payout (sent to the provider as the merchant reference). */
  objectId: string;
  /** The provider's reference of the operation, when the notice names it (a notice naming another one than ours is refused). */
  reference?: string | undefined;
  status: string;
  reason?: string | undefined;
  /** The operator's receipt of the money movement, when it gives one. */
  receipt?: string | undefined;
  /**
   * The amount the operator says moved, as it wrote it in major units of our currency ("15", "10.50"), when it
   * says. A notice for another amount than ours is never applied.
   */
  amount?: string | undefined;
  /** For a collection on a redirect rail, the operator's page for the payer, when the operator's answer gives it. */
  redirectUrl?: string | undefined;
}

/** A provider's view of one operation, as its status query answers it. */
export type ProviderStatus = Omit<ProviderNotice, 'noticeId'>;

/** A status query that the operator will answer by callback: nothing is known yet, and nothing may be concluded. */
export const ANSWER_BY_CALLBACK = 'answer_by_callback';

export type CallbackHeaders = Record<string, string | string[] | undefined>;

export interface RailProvider {
  readonly name: string;
  /** Must be idempotent by `order.id`: a retried initiation never prompts the payer twice. */
  initiateCollection(order: CollectionOrder): Promise<ProviderAck>;
  /** Must be idempotent by `order.id`. */
  initiateRefund(order: RefundOrder): Promise<ProviderAck>;
  /** Must be idempotent by `order.id`: a retried initiation never pays the recipient twice. */
  initiatePayout(order: PayoutOrder): Promise<ProviderAck>;
  /**
   * For providers that sign their callbacks (the simulator, gateways): verifies the signature and parses the
   * callback; throws `CallbackRejected` if either fails. Operator connectors read theirs with `readCallback`.
   */
  parseCallback?(rawBody: string, headers: CallbackHeaders): ProviderNotice;
  /**
   * The provider's current view of one operation; undefined when it does not know it; or ANSWER_BY_CALLBACK when
   * its status query answers later, by callback (Daraja's Transaction Status), where `claim` (what an unconfirmed
   * callback said) is kept to check the answer against.
   */
  queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference: string,
    claim?: CallbackClaim,
  ): Promise<ProviderStatus | undefined | typeof ANSWER_BY_CALLBACK>;
  /**
   * Whether `queryStatus` finds an operation of this kind by our id alone, before the provider gave its reference (the
   * operator keys it by an id we chose). An initiation that may have reached such a provider is asked about rather than
   * sent again; one that may have reached another waits for its callback.
   */
  findsByOurId(objectType: NoticeObjectType): boolean;
  /**
   * Closes at the provider a collection we ended unpaid (expired or failed), when the payer could otherwise still
   * pay it there (a Wave checkout session stays payable until Wave's own expiry). Best effort: a payment that beat it
   * is a late payment, handled as such.
   */
  closeCollection?(objectId: string, reference: string): Promise<void>;
  /** Why this provider cannot carry an amount (minor units of a currency with `exponent` decimals), for a 422; undefined if it can. */
  amountProblem?(amount: number, currency: string, exponent: number): string | undefined;
}

/** What an operator's unsigned callback says about one of our operations: believed only once a status query agrees. */
export interface CallbackClaim {
  /** Undefined when the callback does not say (Airtel's one callback URL serves every kind): found by `objectId`. */
  objectType: NoticeObjectType | undefined;
  objectId: string;
  status: string;
  reference?: string | undefined;
  reason?: string | undefined;
  receipt?: string | undefined;
  amount?: string | undefined;
}

/** An operator callback read by its connector. */
export interface CallbackReading {
  /** What the callback says happened, to be confirmed by the operator's status query. */
  claim?: CallbackClaim | undefined;
  /** An answer the connector could authenticate itself: a status query's answer quoting the id the operator gave us for it. */
  confirmed?: ProviderNotice | undefined;
  /** The body the operator expects in answer (HTTP 200). */
  reply: unknown;
}

/**
 * A provider speaking an operator's own API. Its callbacks arrive at
 * `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{callbackToken}[/{path}]`, unsigned (or signed, as Wave's are), and
 * are only believed once the operator's status query agrees.
 */
export interface OperatorConnector extends RailProvider {
  readonly callbackToken: string;
  /** Open operations are asked about after this many quiet seconds (an operator that never repeats a callback), else RECONCILE_AFTER_SECONDS. */
  readonly pollSeconds: number | undefined;
  /**
   * Reads a callback; `path` is what follows the token (empty, or a sub-path the connector chose). `signed` carries
   * the raw body and headers, for an operator that signs its callbacks (Wave): a bad signature throws
   * CallbackRejected. Throws ApiError on a body it cannot read.
   */
  readCallback(
    path: string,
    body: unknown,
    signed?: { rawBody: string | undefined; headers: CallbackHeaders },
  ): Promise<CallbackReading>;
  /** The callback URLs to show at start (Airtel's is registered in the operator's portal). */
  callbackUrls(): string[];
  /**
   * Reads the balances of the accounts the operator holds our money in (docs/guides/operator-float.md), where its API
   * gives them: at once, or ANSWER_BY_CALLBACK when the operator answers later (Daraja's Account Balance), the answer
   * then going to `ConnectorDeps.balances`. Throws ProviderError when the operator cannot be asked or refuses.
   */
  readBalances?(): Promise<FloatReading[] | typeof ANSWER_BY_CALLBACK>;
}

/**
 * One operator account's balance as its operator gave it (minor units of its currency), or why it could not be read
 * (the other accounts of the same operator may still have been).
 */
export type FloatReading = { account: string; currency: string; balance: number } | { account: string; error: string };

/** Where balances answered by callback go (the float module's service, handed in by composition.ts). */
export interface BalanceSink {
  /** The balances a connector's operator answered with, or why it could not give them. */
  record(connector: string, outcome: { readings: FloatReading[] } | { error: string }): Promise<void>;
}

export function isConnector(provider: RailProvider): provider is OperatorConnector {
  return 'readCallback' in provider;
}

/**
 * The provider registry (ProviderRegistry) as the services that create operations see it: which provider runs each
 * rail, and what amounts it can carry.
 */
export interface ProviderLookup {
  /** The provider's name for a rail of the catalogue. */
  nameFor(market: string, rail: string): string;
  /** Why the rail's provider cannot carry this amount (a message for a 422 `amount_not_supported`), or undefined when it can. */
  amountProblem(market: string, rail: string, amount: number, currency: string): string | undefined;
}

/** A provider call that failed (timeout, refused connection, 5xx): the worker retries it later. */
export class ProviderError extends Error {}

/**
 * A provider callback whose signature is missing, malformed, stale or wrong: 401 with the challenge RFC 9110 §11.6.1
 * requires, naming the callback scheme (the credentials travel in the Provider-Signature header, not Authorization;
 * docs/deviations.md).
 */
export class CallbackRejected extends ApiError {
  constructor(detail: string) {
    super('invalid_signature', detail, {
      headers: { 'WWW-Authenticate': 'Provider-Signature realm="provider-callbacks"' },
    });
  }
}
