// What Daraja sends back, read: its callbacks (the STK Push callback, and the results and queue time-outs of B2C,
// Reversal and Transaction Status) as claims about our operations, a Transaction Status answer believed only when it
// answers a query we made, and Daraja's result codes as our stable reasons. The requests are made in
// daraja.connector.ts. Daraja signs nothing: a callback is only a claim, believed once the status query agrees.
import { ApiError } from '../../../platform/errors.js';
import { isUuid } from '../../../platform/ids.js';
import { exponentOf, type ConnectorDeps } from '../connector-config.js';
import { balanceMinorUnits, field, text } from '../operator-http.js';
import type { CallbackClaim, CallbackReading, FloatReading, NoticeObjectType, ProviderNotice } from '../provider.js';
import * as repo from './daraja.repository.js';

/**
 * What reading a callback needs of the connector: its name (its status queries are kept under it), db and log; the
 * catalogue and the balance sink for Account Balance answers.
 */
export type CallbackReader = Pick<ConnectorDeps, 'db' | 'log'> &
  Partial<Pick<ConnectorDeps, 'catalogue' | 'balances'>> & { name: string };

/** STK result codes as our stable reasons (the six, and the documented limits). */
export const STK_REASONS: Record<string, string> = {
  '1': 'insufficient_funds',
  '1032': 'payer_declined',
  '1037': 'payer_unreachable',
  '2001': 'wrong_pin',
  '1019': 'prompt_expired',
  '1001': 'payer_busy',
  '2': 'payer_limit_reached',
  '3': 'payer_limit_reached',
  '4': 'payer_limit_reached',
  '8': 'payer_limit_reached',
  '17': 'payer_busy',
  '2028': 'provider_refused',
  SFC_IC0003: 'provider_refused',
};

/** B2C result codes as payout reasons. */
const B2C_REASONS: Record<string, string> = {
  '1': 'insufficient_provider_balance',
  '2': 'recipient_limit_reached',
  '3': 'recipient_limit_reached',
  '4': 'recipient_limit_reached',
  '8': 'recipient_limit_reached',
  '2040': 'invalid_account',
  '2001': 'provider_refused',
  '21': 'provider_refused',
  '8006': 'provider_refused',
  '2028': 'provider_refused',
  SFC_IC0003: 'invalid_account',
};

/** Reversal result codes as refund reasons: R000001 means someone reversed the payment before us. */
const REVERSAL_REASONS: Record<string, string> = {
  R000001: 'collection_reversed',
  R000002: 'provider_refused',
  '1': 'insufficient_provider_balance',
};

/** Transaction Status's TransactionStatus values in our terms. */
function transactionStatus(value: string | undefined): 'successful' | 'failed' | 'pending' {
  if (value === 'Completed') return 'successful';
  if (value === 'Cancelled' || value === 'Declined' || value === 'Expired' || value === 'Failed') return 'failed';
  return 'pending';
}

/** A ResultParameter (or CallbackMetadata item) by its key: Daraja's order varies, and an item may have no Value. */
function parameter(list: unknown, key: string): string | undefined {
  if (!Array.isArray(list)) return undefined;
  for (const item of list) {
    if (text(item, 'Key') === key || text(item, 'Name') === key) return text(item, 'Value');
  }
  return undefined;
}

/** The callback kinds and our operation each is about. */
const CALLBACK_KINDS: Record<string, NoticeObjectType> = {
  stk: 'collection',
  'b2c-result': 'payout',
  'b2c-timeout': 'payout',
  'reversal-result': 'refund',
  'reversal-timeout': 'refund',
  'status-result': 'collection',
  'status-timeout': 'collection',
};

const ACCEPTED = { ResultCode: 0, ResultDesc: 'Accepted' };

/**
 * A callback at `{kind}/{our id}`: the STK Push callback or a B2C or Reversal result as a claim, a Transaction Status
 * result as a confirmed notice (or nothing), a queue time-out as nothing; each is answered with ACCEPTED.
 */
export async function readDarajaCallback(
  reader: CallbackReader,
  path: string,
  body: unknown,
): Promise<CallbackReading> {
  const [kind = '', id = ''] = path.split('/');
  if (kind === 'balance-result' || kind === 'balance-timeout') {
    if (!isUuid(id)) throw new ApiError('not_found', `No Daraja callback is sent to '${path}'.`);
    await balanceAnswer(reader, kind, id, body);
    return { reply: ACCEPTED };
  }
  const objectType = CALLBACK_KINDS[kind];
  if (objectType === undefined || !isUuid(id))
    throw new ApiError('not_found', `No Daraja callback is sent to '${path}'.`);
  if (kind === 'stk') return { claim: stkClaim(id, body), reply: ACCEPTED };
  const result = field(body, 'Result');
  if (typeof result !== 'object' || result === null)
    throw new ApiError('validation_failed', 'A Daraja result carries a Result object.');
  if (kind.endsWith('-timeout')) {
    // The request timed out in M-Pesa's queue: no outcome. The sweeps ask Transaction Status later.
    reader.log.warn({ kind, id }, 'Daraja queue time-out; the status is asked later');
    return { reply: ACCEPTED };
  }
  if (kind === 'status-result') return { confirmed: await statusAnswer(reader, id, result), reply: ACCEPTED };
  const code = text(result, 'ResultCode') ?? '';
  const parameters = field(result, 'ResultParameters', 'ResultParameter');
  const reasons = objectType === 'payout' ? B2C_REASONS : REVERSAL_REASONS;
  const claim: CallbackClaim = {
    objectType,
    objectId: id,
    reference: text(result, 'OriginatorConversationID'),
    status: code === '0' ? 'successful' : 'failed',
    reason: code === '0' ? undefined : (reasons[code] ?? 'provider_error'),
    receipt: code === '0' ? (parameter(parameters, 'TransactionReceipt') ?? text(result, 'TransactionID')) : undefined,
    amount: code === '0' ? (parameter(parameters, 'TransactionAmount') ?? parameter(parameters, 'Amount')) : undefined,
  };
  return { claim, reply: ACCEPTED };
}

/** The STK callback: Body.stkCallback with its ResultCode and, on success, the receipt and amount. */
function stkClaim(id: string, body: unknown): CallbackClaim {
  const callback = field(body, 'Body', 'stkCallback');
  const code = text(callback, 'ResultCode');
  const reference = text(callback, 'CheckoutRequestID');
  if (code === undefined || reference === undefined)
    throw new ApiError(
      'validation_failed',
      'An STK callback carries Body.stkCallback with CheckoutRequestID and ResultCode.',
    );
  const items = field(callback, 'CallbackMetadata', 'Item');
  if (code !== '0')
    return {
      objectType: 'collection',
      objectId: id,
      reference,
      status: 'failed',
      reason: STK_REASONS[code] ?? 'provider_error',
    };
  return {
    objectType: 'collection',
    objectId: id,
    reference,
    status: 'successful',
    receipt: parameter(items, 'MpesaReceiptNumber'),
    amount: parameter(items, 'Amount'),
  };
}

/**
 * A Transaction Status answer, believed only if it quotes the ConversationID of a query we made about this
 * operation. It must agree with the callback that led to the query, if one did.
 */
async function statusAnswer(reader: CallbackReader, id: string, result: object): Promise<ProviderNotice | undefined> {
  const conversationId = text(result, 'ConversationID');
  const query = conversationId === undefined ? undefined : await repo.takeQuery(reader.db, reader.name, conversationId);
  if (!query || query.object_id !== id) {
    reader.log.warn({ id, conversation_id: conversationId }, 'Transaction Status answer to no query of ours; ignored');
    return undefined;
  }
  const parameters = field(result, 'ResultParameters', 'ResultParameter');
  if (text(result, 'ResultCode') !== '0') {
    reader.log.warn(
      { id, result_code: text(result, 'ResultCode') },
      'Transaction Status could not tell; the sweeps ask again',
    );
    return undefined;
  }
  const status = transactionStatus(parameter(parameters, 'TransactionStatus'));
  if (status === 'pending') return undefined;
  if (query.claimed_status !== null && query.claimed_status !== status) {
    reader.log.warn(
      { id, claimed: query.claimed_status, queried: status },
      'Daraja result contradicted by Transaction Status; nothing changed',
    );
    return undefined;
  }
  const receipt = parameter(parameters, 'ReceiptNo');
  // Asked by receipt: the answer must be about that receipt. Asked about a payout: about its OriginatorConversationID.
  const originator = parameter(parameters, 'OriginatorConversationID');
  if (
    (query.claimed_receipt !== null && receipt !== query.claimed_receipt) ||
    (query.object_type === 'payout' && originator !== undefined && originator !== id)
  ) {
    reader.log.warn(
      { id, receipt, originator },
      'Transaction Status answered about another transaction; nothing changed',
    );
    return undefined;
  }
  return {
    noticeId: `status:${conversationId}`,
    objectType: query.object_type,
    objectId: id,
    status,
    reason: status === 'failed' ? (query.claimed_reason ?? 'provider_error') : undefined,
    receipt,
    amount: status === 'successful' ? parameter(parameters, 'Amount') : undefined,
  };
}

/**
 * An Account Balance answer (or its queue time-out) at `balance-{result|timeout}/{ref}`, believed only if it quotes the
 * ConversationID and OriginatorConversationID of the connector's query in flight, whose ResultURL carried `ref`. Its
 * `AccountBalance` parameter lists the accounts as `Name|Currency|Current|Available|Reserved|Uncleared`, `&` between
 * them; the available amount is the float.
 */
async function balanceAnswer(
  reader: CallbackReader,
  kind: 'balance-result' | 'balance-timeout',
  ref: string,
  body: unknown,
): Promise<void> {
  const result = field(body, 'Result');
  const conversationId = text(result, 'ConversationID');
  const originator = text(result, 'OriginatorConversationID');
  if (conversationId === undefined || originator === undefined)
    throw new ApiError(
      'validation_failed',
      'A Daraja result carries a Result object with ConversationID and OriginatorConversationID.',
    );
  if (!(await repo.takeBalanceQuery(reader.db, reader.name, { conversationId, originator, ref }))) {
    reader.log.warn({ ref, conversation_id: conversationId }, 'Account Balance answer to no query in flight; ignored');
    return;
  }
  const sink = reader.balances;
  if (sink === undefined) return;
  if (kind === 'balance-timeout') {
    await sink.record(reader.name, { error: 'Daraja timed the Account Balance query out in its queue' });
    return;
  }
  const code = text(result, 'ResultCode') ?? '';
  if (code !== '0') {
    await sink.record(reader.name, {
      error: `Daraja answered ResultCode ${code}: ${text(result, 'ResultDesc') ?? 'no description'}`,
    });
    return;
  }
  const listed = parameter(field(result, 'ResultParameters', 'ResultParameter'), 'AccountBalance') ?? '';
  const readings: FloatReading[] = [];
  for (const group of listed.split('&')) {
    const [account = '', currency = '', , available = ''] = group.split('|');
    if (account === '' || !/^[A-Z]{3}$/.test(currency)) continue;
    const exponent = reader.catalogue ? exponentOf(reader.catalogue, currency) : 2;
    const balance = balanceMinorUnits(available, exponent);
    readings.push(
      balance === undefined
        ? { account, error: `Daraja gave the balance '${available}', which is not an amount` }
        : { account, currency, balance },
    );
  }
  await sink.record(
    reader.name,
    readings.length > 0 ? { readings } : { error: 'Daraja answered without an AccountBalance parameter' },
  );
}
