// The rail provider interface: every rail (mobile money, bank transfer) is run by one provider. The sandbox
// simulator is the first implementation; the HTTP gateway speaks the same protocol to a real aggregator.
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

/** The provider's synchronous answer to an initiation: accepted (the payer is prompted) or refused at once. */
export interface ProviderAck {
  reference: string;
  status: 'pending' | 'failed';
  reason?: string | undefined;
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
  reference: string;
  status: string;
  reason?: string | undefined;
}

export type CallbackHeaders = Record<string, string | string[] | undefined>;

export interface RailProvider {
  readonly name: string;
  /** Must be idempotent by `order.id`: a retried initiation never prompts the payer twice. */
  initiateCollection(order: CollectionOrder): Promise<ProviderAck>;
  /** Must be idempotent by `order.id`. */
  initiateRefund(order: RefundOrder): Promise<ProviderAck>;
  /** Must be idempotent by `order.id`: a retried initiation never pays the recipient twice. */
  initiatePayout(order: PayoutOrder): Promise<ProviderAck>;
  /** Verifies the provider's signature and parses its callback; throws `CallbackRejected` if either fails. */
  parseCallback(rawBody: string, headers: CallbackHeaders): ProviderNotice;
  /** The provider's current view of one operation, or undefined when it does not know it. */
  queryStatus(objectType: NoticeObjectType, objectId: string, reference: string): Promise<Omit<ProviderNotice, 'noticeId'> | undefined>;
}

/** A provider call that failed (timeout, refused connection, 5xx): the worker retries it later. */
export class ProviderError extends Error {}

export class CallbackRejected extends ApiError {
  constructor(detail: string) {
    super('invalid_signature', detail);
  }
}
