// One error type with a stable code, and the one table that maps each code to its HTTP status.

export const ERROR_TYPE_BASE = 'https://payments.example/errors/';

export const ERROR_CODES = {
  validation_failed: { status: 400, title: 'Validation failed' },
  invalid_json: { status: 400, title: 'Malformed JSON body' },
  invalid_market: { status: 400, title: 'Invalid market' },
  invalid_rail: { status: 400, title: 'Invalid rail' },
  invalid_currency: { status: 400, title: 'Invalid currency' },
  invalid_customer: { status: 400, title: 'Invalid customer' },
  invalid_cursor: { status: 400, title: 'Invalid cursor' },
  invalid_webhook_url: { status: 400, title: 'Invalid webhook URL' },
  invalid_redirect_url: { status: 400, title: 'Invalid redirect URL' },
  invalid_asset: { status: 400, title: 'Invalid asset' },
  invalid_address: { status: 400, title: 'Invalid address' },
  market_required: { status: 400, title: 'Market required' },
  catalogue_widened: { status: 400, title: 'Configuration widens the catalogue' },
  phone_number_length: { status: 400, title: 'Phone number has the wrong length' },
  phone_number_country: { status: 400, title: 'Phone number outside the market' },
  phone_number_unknown_prefix: { status: 400, title: 'Phone number prefix unknown' },
  phone_number_not_mobile: { status: 400, title: 'Not a mobile number' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  invalid_signature: { status: 401, title: 'Invalid signature' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  collection_not_refundable: { status: 409, title: 'Collection not refundable' },
  refund_in_progress: { status: 409, title: 'Refund in progress' },
  transition_not_allowed: { status: 409, title: 'Transition not allowed' },
  source_name_taken: { status: 409, title: 'Source name taken' },
  webhook_endpoint_limit_reached: { status: 409, title: 'Webhook endpoint limit reached' },
  webhook_endpoint_disabled: { status: 409, title: 'Webhook endpoint disabled' },
  no_webhook_endpoints: { status: 409, title: 'No webhook endpoints' },
  checkout_session_not_open: { status: 409, title: 'Checkout session not open' },
  checkout_session_expired: { status: 409, title: 'Checkout session expired' },
  deposit_address_pool_empty: { status: 409, title: 'Deposit address pool empty' },
  deposit_conflict: { status: 409, title: 'Deposit conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  amount_out_of_range: { status: 422, title: 'Amount out of range' },
  amount_not_supported: { status: 422, title: 'Amount not supported by the rail' },
  idempotency_key_missing: { status: 422, title: 'Idempotency key missing' },
  idempotency_key_invalid: { status: 422, title: 'Idempotency key invalid' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  refund_amount_mismatch: { status: 422, title: 'Refund amount mismatch' },
  rate_source_unavailable: { status: 422, title: 'Rate source unavailable' },
  deposit_address_unknown: { status: 422, title: 'Deposit address unknown' },
  route_unavailable: { status: 422, title: 'Route unavailable' },
  operation_not_supported: { status: 422, title: 'Operation not offered on this rail' },
  route_mismatch: { status: 422, title: 'Route does not fit the beneficiary' },
  beneficiary_inactive: { status: 422, title: 'Beneficiary inactive' },
  rate_unavailable: { status: 422, title: 'No current rate' },
  insufficient_balance: { status: 422, title: 'Insufficient balance' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  database_unavailable: { status: 503, title: 'Database unavailable' },
  overloaded: { status: 503, title: 'Too busy to prompt the payer in time' },
  rail_unavailable: { status: 503, title: 'Rail unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
}

export function problemBody(error: ApiError, requestId: string): Problem {
  const body: Problem = {
    type: ERROR_TYPE_BASE + error.code,
    title: ERROR_CODES[error.code].title,
    status: error.status,
    detail: error.message,
    code: error.code,
    request_id: requestId,
  };
  if (error.errors && error.errors.length > 0) body.errors = error.errors;
  return body;
}

export const notFound = (what: string): ApiError =>
  new ApiError('not_found', `No ${what} with that id exists in this workspace.`);

/** Seconds a client should wait after a database fault: a failover takes a few seconds (docs/operations.md). */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export const databaseUnavailable = (): ApiError =>
  new ApiError(
    'database_unavailable',
    'The database is unavailable for a moment (a restart or failover). Retry with the same Idempotency-Key: a write that was made is answered from its stored outcome, one that was not is made once.',
    { headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) } },
  );
