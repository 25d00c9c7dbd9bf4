// The client: one object per resource, named after the resource (not the path), each method one operation of the
// OpenAPI document. The calls go through openapi-fetch, typed by the generated `paths`, and the retrying fetch.
import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './generated/openapi.js';
import {
  CALL_REPEATABLE_HEADER,
  CALL_TIMEOUT_HEADER,
  DEFAULT_RETRY,
  newIdempotencyKey,
  PaymentsError,
  retryingFetch,
  type Problem,
  type RetryOptions,
} from './http.js';
import { verifyWebhook, type WebhookEvent } from './webhooks.js';

type Schemas = components['schemas'];
/** One item of a bulk commit; its key is made for it when absent. */
type BulkItem = Omit<Schemas['BulkPayoutRequest']['items'][number], 'idempotency_key'> & { idempotency_key?: string };
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
/** The JSON body an operation takes. */
type Body<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

export interface PaymentsOptions extends Partial<RetryOptions> {
  /** An API token (`Authorization: Bearer …`). */
  token: string;
  /** Where the service answers, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** For a write: the Idempotency-Key; one is made for the call when none is given, and kept across its retries. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** This call's attempts may take this long each, in ms. */
  timeoutMs?: number;
}

/** A page of a list, as the service answers it. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Every item of a list, page after page, as `for await (const x of list)`; `firstPage()` or `page(cursor)` for one. */
export class PagedList<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {}

  firstPage(): Promise<Page<T>> {
    return this.fetchPage(undefined);
  }

  /** One page: the first, or the one after the page whose `next_cursor` this is (a UI pages this way). */
  page(cursor?: string): Promise<Page<T>> {
    return this.fetchPage(cursor);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield* page.data;
      cursor = page.has_more && page.next_cursor !== null ? page.next_cursor : undefined;
    } while (cursor !== undefined);
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's body, or a PaymentsError carrying the problem (a body that is no problem document is described). */
async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const problem: Problem =
    typeof error === 'object' && error !== null && 'code' in error
      ? (error as Problem)
      : {
          type: 'about:blank',
          title: response.statusText,
          status: response.status,
          detail: typeof error === 'string' ? error.slice(0, 500) : `HTTP ${response.status}`,
          code: 'http_error',
        };
  throw new PaymentsError(problem, response.headers.get('x-request-id') ?? undefined);
}

export class Payments {
  private readonly client: Client<paths>;

  constructor(options: PaymentsOptions) {
    const retry: RetryOptions = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY.maxRetries,
      maxRetryTimeMs: options.maxRetryTimeMs ?? DEFAULT_RETRY.maxRetryTimeMs,
      timeoutMs: options.timeoutMs ?? DEFAULT_RETRY.timeoutMs,
      backoffMs: options.backoffMs ?? DEFAULT_RETRY.backoffMs,
    };
    this.client = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { authorization: `Bearer ${options.token}` },
      fetch: retryingFetch(options.fetch ?? globalThis.fetch, retry),
    });
  }

  /** The options every call passes on: its signal, its timeout, and (for writes) its Idempotency-Key. */
  private static call(options: CallOptions = {}, write = false) {
    const headers: Record<string, string> = {};
    if (write) headers['idempotency-key'] = options.idempotencyKey ?? newIdempotencyKey();
    if (options.timeoutMs !== undefined) headers[CALL_TIMEOUT_HEADER] = String(options.timeoutMs);
    return { headers, ...(options.signal ? { signal: options.signal } : {}) };
  }

  private static key(options: CallOptions = {}): { 'Idempotency-Key': string } {
    return { 'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey() };
  }

  readonly collections = {
    /** Row 1: asks the payer for money on one rail of one market. */
    create: (market: string, rail: string, body: Body<'createCollection'>, options?: CallOptions) => {
      const header = Payments.key(options);
      return unwrap(
        this.client.POST('/v1/collections/{market}/rails/{rail}', {
          params: { path: { market, rail }, header },
          body,
          ...Payments.call(options),
        }),
      );
    },
    get: (id: string, options?: CallOptions) =>
      unwrap(this.client.GET('/v1/collections/{id}', { params: { path: { id } }, ...Payments.call(options) })),
    /** Row 3: newest first; iterate for every page. */
    list: (filters: Omit<Query<'listCollections'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Collection']>((cursor) =>
        unwrap(
          this.client.GET('/v1/collections', { params: { query: { ...filters, cursor } }, ...Payments.call(options) }),
        ),
      ),
    /** Row 2: a full refund. */
    refund: (id: string, body: Body<'refundCollection'>, options?: CallOptions) => {
      const header = Payments.key(options);
      return unwrap(
        this.client.POST('/v1/collections/{id}/refund', {
          params: { path: { id }, header },
          body,
          ...Payments.call(options),
        }),
      );
    },
    refunds: (id: string, filters: Omit<Query<'listCollectionRefunds'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Refund']>((cursor) =>
        unwrap(
          this.client.GET('/v1/collections/{id}/refunds', {
            params: { path: { id }, query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
  };

  readonly refunds = {
    get: (id: string, options?: CallOptions) =>
      unwrap(this.client.GET('/v1/refunds/{id}', { params: { path: { id } }, ...Payments.call(options) })),
    /** The workspace's refunds of every collection, newest first; iterate for every page. */
    list: (filters: Omit<Query<'listRefunds'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Refund']>((cursor) =>
        unwrap(
          this.client.GET('/v1/refunds', { params: { query: { ...filters, cursor } }, ...Payments.call(options) }),
        ),
      ),
  };

  readonly checkoutSessions = {
    create: (body: Body<'createCheckoutSession'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/checkout/sessions', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(this.client.GET('/v1/checkout/sessions/{id}', { params: { path: { id } }, ...Payments.call(options) })),
    list: (filters: Omit<Query<'listCheckoutSessions'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['CheckoutSession']>((cursor) =>
        unwrap(
          this.client.GET('/v1/checkout/sessions', {
            params: { query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
  };

  readonly balances = {
    list: (options?: CallOptions) => unwrap(this.client.GET('/v1/balances', Payments.call(options))),
  };

  readonly reports = {
    /** A day's settlement report in one currency. */
    settlement: async (query: Query<'getSettlementReport'>, options?: CallOptions) => {
      const call = Payments.call(options);
      const report = await unwrap(
        this.client.GET('/v1/reports/settlement', {
          params: { query },
          ...call,
          headers: { ...call.headers, accept: 'application/json' },
        }),
      );
      return report as Schemas['SettlementReport'];
    },
    /** The same report as CSV (`section,market,rail,item,count,amount`). */
    settlementCsv: (query: Query<'getSettlementReport'>, options?: CallOptions): Promise<string> => {
      const call = Payments.call(options);
      return unwrap(
        this.client.GET('/v1/reports/settlement', {
          params: { query },
          parseAs: 'text',
          ...call,
          headers: { ...call.headers, accept: 'text/csv' },
        }),
      );
    },
  };

  readonly auditEvents = {
    /** The audit log, newest first: the token's own workspace, or (the admin token) the one `workspace_id` names. */
    list: (filters: Omit<Query<'listAuditEvents'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['AuditEvent']>((cursor) => {
        const call = Payments.call(options);
        // The JSON answer (the CSV one is `csv` below).
        return unwrap(
          this.client.GET('/v1/audit-events', {
            params: { query: { ...filters, cursor } },
            ...call,
            headers: { ...call.headers, accept: 'application/json' },
          }),
        ) as Promise<Schemas['AuditEventPage']>;
      }),
    /**
     * The same events as one CSV document (one header line): the service answers at most 10,000 events at a time,
     * so this follows each answer's `Next-Cursor` until the export is whole.
     */
    csv: async (filters: Omit<Query<'listAuditEvents'>, 'cursor' | 'limit'> = {}, options?: CallOptions) => {
      const call = Payments.call(options);
      const parts: string[] = [];
      let cursor: string | undefined;
      do {
        const answer = await this.client.GET('/v1/audit-events', {
          params: { query: { ...filters, cursor } },
          parseAs: 'text',
          ...call,
          headers: { ...call.headers, accept: 'text/csv' },
        });
        const text = await unwrap<string>(Promise.resolve(answer as Answer<string>));
        // Every answer starts with the header line; the document keeps the first one only.
        parts.push(parts.length === 0 ? text : text.slice(text.indexOf('\n') + 1));
        cursor = answer.response.headers.get('next-cursor') ?? undefined;
      } while (cursor !== undefined);
      return parts.join('');
    },
  };

  readonly workspace = {
    get: (options?: CallOptions) => unwrap(this.client.GET('/v1/workspace', Payments.call(options))),
    update: (body: Body<'updateWorkspace'>, options?: CallOptions) =>
      unwrap(this.client.PATCH('/v1/workspace', { body, ...Payments.call(options) })),
    /** What the workspace may use: markets, rails, limits, exponents, capabilities, how the payer authorises. */
    configuration: (options?: CallOptions) =>
      unwrap(this.client.GET('/v1/workspace/configuration', Payments.call(options))),
  };

  readonly events = {
    get: (id: string, options?: CallOptions) =>
      unwrap(this.client.GET('/v1/events/{id}', { params: { path: { id } }, ...Payments.call(options) })),
    list: (filters: Omit<Query<'listEvents'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Event']>((cursor) =>
        unwrap(this.client.GET('/v1/events', { params: { query: { ...filters, cursor } }, ...Payments.call(options) })),
      ),
    deliveries: (id: string, options?: CallOptions) =>
      new PagedList<Schemas['Delivery']>((cursor) =>
        unwrap(
          this.client.GET('/v1/events/{id}/deliveries', {
            params: { path: { id }, query: { cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
    resend: (id: string, body: Body<'resendEvent'> = {}, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/events/{id}/resend', { params: { path: { id } }, body, ...Payments.call(options, true) }),
      ),
  };

  readonly webhookEndpoints = {
    create: (body: Body<'createWebhookEndpoint'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/webhooks/endpoints', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(this.client.GET('/v1/webhooks/endpoints/{id}', { params: { path: { id } }, ...Payments.call(options) })),
    list: (options?: CallOptions) =>
      new PagedList<Schemas['WebhookEndpoint']>((cursor) =>
        unwrap(this.client.GET('/v1/webhooks/endpoints', { params: { query: { cursor } }, ...Payments.call(options) })),
      ),
    update: (id: string, body: Body<'updateWebhookEndpoint'>, options?: CallOptions) =>
      unwrap(
        this.client.PATCH('/v1/webhooks/endpoints/{id}', { params: { path: { id } }, body, ...Payments.call(options) }),
      ),
    delete: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.DELETE('/v1/webhooks/endpoints/{id}', { params: { path: { id } }, ...Payments.call(options) }),
      ),
    /** A new signing secret, shown once; the old one keeps signing for 24 hours. */
    rotateSecret: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/webhooks/endpoints/{id}/rotate-secret', {
          params: { path: { id } },
          ...Payments.call(options, true),
        }),
      ),
    /** Sends a `webhook.test` event to this endpoint only: one attempt, right away; answers the delivery queued. */
    test: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/webhooks/endpoints/{id}/test', {
          params: { path: { id } },
          ...Payments.call(options, true),
        }),
      ),
    /** The endpoint's delivery log: its deliveries of every event, newest first, each with its attempts. */
    deliveries: (
      id: string,
      filters: Omit<Query<'listWebhookEndpointDeliveries'>, 'cursor'> = {},
      options?: CallOptions,
    ) =>
      new PagedList<Schemas['Delivery']>((cursor) =>
        unwrap(
          this.client.GET('/v1/webhooks/endpoints/{id}/deliveries', {
            params: { path: { id }, query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
  };

  readonly webhooks = {
    /**
     * Checks a delivery's Standard Webhooks signature against the endpoint's secret (and its freshness) and returns
     * the event, typed by its `type`; throws when it is forged, altered or stale.
     */
    verify: (
      body: string,
      headers: Record<string, string | string[] | undefined> | Headers,
      secret: string,
    ): WebhookEvent => verifyWebhook(body, headers, secret),
  };

  readonly beneficiaries = {
    create: (body: Body<'createBeneficiary'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/beneficiaries', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/beneficiaries/{beneficiaryId}', {
          params: { path: { beneficiaryId: id } },
          ...Payments.call(options),
        }),
      ),
    list: (filters: Omit<Query<'listBeneficiaries'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Beneficiary']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/beneficiaries', {
            params: { query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
    deactivate: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.DELETE('/v1/api/beneficiaries/{beneficiaryId}', {
          params: { path: { beneficiaryId: id } },
          ...Payments.call(options),
        }),
      ),
  };

  /** Offramp routes (row 12): what a payout may use. */
  readonly routes = {
    create: (body: Body<'createRoute'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/routes', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/routes/{routeId}', { params: { path: { routeId: id } }, ...Payments.call(options) }),
      ),
    list: (filters: Omit<Query<'listRoutes'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['OfframpRoute']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/routes', { params: { query: { ...filters, cursor } }, ...Payments.call(options) }),
        ),
      ),
    update: (id: string, body: Body<'updateRoute'>, options?: CallOptions) =>
      unwrap(
        this.client.PATCH('/v1/api/routes/{routeId}', {
          params: { path: { routeId: id } },
          body,
          ...Payments.call(options),
        }),
      ),
  };

  /** Payouts (rows 11 and 17): commit one or many, read them. */
  readonly payouts = {
    /**
     * Up to 100 payouts in one request (`POST /v1/payouts/bulk`), each answered on its own in request order. An item
     * without an `idempotency_key` gets one here (a UUID v4), kept across the call's retries; since every item carries
     * its key, the call is retried like any keyed write. Items refused `idempotency_key_in_use` are worth sending again.
     */
    bulk: (items: BulkItem[], options?: Omit<CallOptions, 'idempotencyKey'>) => {
      const { headers, ...rest } = Payments.call(options);
      return unwrap(
        this.client.POST('/v1/payouts/bulk', {
          body: { items: items.map((i) => ({ ...i, idempotency_key: i.idempotency_key ?? newIdempotencyKey() })) },
          headers: { ...headers, [CALL_REPEATABLE_HEADER]: '1' },
          ...rest,
        }),
      );
    },
    create: (body: Body<'commitTransaction'>, options?: CallOptions) => {
      const header = Payments.key(options);
      return unwrap(
        this.client.POST('/api/transactions/commit', {
          params: { header },
          body,
          ...Payments.call(options),
        }),
      );
    },
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/transactions/{transactionId}', {
          params: { path: { transactionId: id } },
          ...Payments.call(options),
        }),
      ),
    list: (filters: Omit<Query<'listTransactions'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Payout']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/transactions', {
            params: { query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
  };

  readonly depositAddresses = {
    create: (body: Body<'createDepositAddress'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/deposit-addresses', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/deposit-addresses/{addressId}', {
          params: { path: { addressId: id } },
          ...Payments.call(options),
        }),
      ),
    list: (filters: Omit<Query<'listDepositAddresses'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['DepositAddress']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/deposit-addresses', {
            params: { query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
    /** Admin: adds addresses to the pool new deposit addresses are taken from. */
    stockPool: (body: Body<'stockDepositAddressPool'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/deposit-addresses/pool', { body, ...Payments.call(options, true) })),
  };

  readonly deposits = {
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/deposits/{depositId}', {
          params: { path: { depositId: id } },
          ...Payments.call(options),
        }),
      ),
    list: (filters: Omit<Query<'listDeposits'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['Deposit']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/deposits', { params: { query: { ...filters, cursor } }, ...Payments.call(options) }),
        ),
      ),
    /** A liquidity provider reports a transfer it saw arrive. */
    report: (body: Body<'reportDeposit'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/deposits', { body, ...Payments.call(options, true) })),
    autoconvertCredit: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/autoconvert/credits/{creditId}', {
          params: { path: { creditId: id } },
          ...Payments.call(options),
        }),
      ),
  };

  readonly marketData = {
    sources: {
      create: (body: Body<'createRateSource'>, options?: CallOptions) =>
        unwrap(this.client.POST('/v1/api/markets/sources', { body, ...Payments.call(options, true) })),
      list: (filters: Omit<Query<'listRateSources'>, 'cursor'> = {}, options?: CallOptions) =>
        new PagedList<Schemas['RateSource']>((cursor) =>
          unwrap(
            this.client.GET('/v1/api/markets/sources', {
              params: { query: { ...filters, cursor } },
              ...Payments.call(options),
            }),
          ),
        ),
      update: (id: string, body: Body<'updateRateSource'>, options?: CallOptions) =>
        unwrap(
          this.client.PATCH('/v1/api/markets/sources/{sourceId}', {
            params: { path: { sourceId: id } },
            body,
            ...Payments.call(options),
          }),
        ),
    },
    rates: {
      post: (body: Body<'postRate'>, options?: CallOptions) =>
        unwrap(this.client.POST('/v1/api/markets/rates', { body, ...Payments.call(options, true) })),
      list: (filters: Omit<Query<'listRates'>, 'cursor'> = {}, options?: CallOptions) =>
        new PagedList<Schemas['MarketRate']>((cursor) =>
          unwrap(
            this.client.GET('/v1/api/markets/rates', {
              params: { query: { ...filters, cursor } },
              ...Payments.call(options),
            }),
          ),
        ),
    },
  };

  /** The operator of a phone number and the rails it can pay by (a guess where numbers can be ported). */
  readonly providers = {
    predict: (body: Body<'predictProvider'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/predict-provider', { body, ...Payments.call(options) })),
  };

  /** Rail availability: each market and rail, by direction, operational, degraded or down, why and since when. */
  readonly availability = {
    get: (options?: CallOptions) => unwrap(this.client.GET('/v1/availability', Payments.call(options))),
  };

  readonly riskSignals = {
    create: (body: Body<'createRiskSignal'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/api/risk/signals', { body, ...Payments.call(options, true) })),
    get: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.GET('/v1/api/risk/signals/{signalId}', {
          params: { path: { signalId: id } },
          ...Payments.call(options),
        }),
      ),
    listOpen: (filters: Omit<Query<'listOpenRiskSignals'>, 'cursor'> = {}, options?: CallOptions) =>
      new PagedList<Schemas['RiskSignal']>((cursor) =>
        unwrap(
          this.client.GET('/v1/api/risk/signals/open', {
            params: { query: { ...filters, cursor } },
            ...Payments.call(options),
          }),
        ),
      ),
    /** Admin: acknowledges or resolves a signal. */
    review: (id: string, body: Body<'reviewRiskSignal'>, options?: CallOptions) =>
      unwrap(
        this.client.PATCH('/v1/api/risk/signals/{signalId}', {
          params: { path: { signalId: id } },
          body,
          ...Payments.call(options),
        }),
      ),
  };

  readonly credentials = {
    list: (options?: CallOptions) => unwrap(this.client.GET('/v1/credentials', Payments.call(options))),
    create: (body: Body<'createCredential'> = {}, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/credentials', { body, ...Payments.call(options, true) })),
    rotate: (id: string, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/credentials/{id}/rotate', { params: { path: { id } }, ...Payments.call(options, true) }),
      ),
    revoke: (id: string, options?: CallOptions) =>
      unwrap(this.client.DELETE('/v1/credentials/{id}', { params: { path: { id } }, ...Payments.call(options) })),
  };

  /** The operator's admin API (an admin token). */
  readonly admin = {
    workspaces: {
      list: (options?: CallOptions) => unwrap(this.client.GET('/v1/admin/workspaces', Payments.call(options))),
      create: (body: Body<'adminCreateWorkspace'>, options?: CallOptions) =>
        unwrap(this.client.POST('/v1/admin/workspaces', { body, ...Payments.call(options, true) })),
      createCredential: (id: string, body: Body<'adminCreateCredential'>, options?: CallOptions) =>
        unwrap(
          this.client.POST('/v1/admin/workspaces/{id}/credentials', {
            params: { path: { id } },
            body,
            ...Payments.call(options, true),
          }),
        ),
      /** A workspace's active configuration (the catalogue, as narrowed for it). */
      configuration: (id: string, options?: CallOptions) =>
        unwrap(
          this.client.GET('/v1/admin/workspaces/{id}/configuration', {
            params: { path: { id } },
            ...Payments.call(options),
          }),
        ),
      /** Narrows the catalogue for a workspace (never widens it); `{ rails: null }` gives it the whole catalogue again. */
      configure: (id: string, body: Body<'adminSetWorkspaceConfiguration'>, options?: CallOptions) =>
        unwrap(
          this.client.PUT('/v1/admin/workspaces/{id}/configuration', {
            params: { path: { id } },
            body,
            ...Payments.call(options, true),
          }),
        ),
    },
    /**
     * The balances operators hold for payouts, as last read (docs/guides/operator-float.md): per connector and account,
     * with the threshold and a status (`unknown` with the error when the last read failed).
     */
    operatorFloat: {
      list: (options?: CallOptions) => unwrap(this.client.GET('/v1/admin/operator-float', Payments.call(options))),
    },
    /** Planned maintenance of a rail: down in every direction from `starts_at` to `ends_at`. */
    maintenance: {
      set: (market: string, rail: string, body: Body<'setRailMaintenance'>, options?: CallOptions) =>
        unwrap(
          this.client.PUT('/v1/admin/maintenance/{market}/{rail}', {
            params: { path: { market, rail } },
            body,
            ...Payments.call(options),
          }),
        ),
      clear: (market: string, rail: string, options?: CallOptions) =>
        unwrap(
          this.client.DELETE('/v1/admin/maintenance/{market}/{rail}', {
            params: { path: { market, rail } },
            ...Payments.call(options),
          }),
        ),
    },
  };

  readonly sandbox = {
    /** Drives a sandbox collection to an outcome (successful on an expired one is a late payment). */
    simulateCollection: (id: string, body: Body<'simulateCollection'>, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/sandbox/collections/{id}/simulate', {
          params: { path: { id } },
          body,
          ...Payments.call(options, true),
        }),
      ),
    simulateRefund: (id: string, body: Body<'simulateRefund'>, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/sandbox/refunds/{id}/simulate', {
          params: { path: { id } },
          body,
          ...Payments.call(options, true),
        }),
      ),
    simulatePayout: (id: string, body: Body<'simulatePayout'>, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/sandbox/payouts/{transactionId}/simulate', {
          params: { path: { transactionId: id } },
          body,
          ...Payments.call(options, true),
        }),
      ),
    /** The workspace's test clock: its offset and the workspace's time by it. */
    clock: (options?: CallOptions) => unwrap(this.client.GET('/v1/sandbox/clock', Payments.call(options))),
    /**
     * Moves the workspace's test clock forward by `seconds` (1 to 2592000): its expiries, webhook retries, simulator
     * steps and idempotency retention fall due as if that time had passed. Answers the clock and what moved.
     */
    advanceClock: (body: Body<'advanceSandboxClock'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/sandbox/clock/advance', { body, ...Payments.call(options, true) })),
    /** A transfer arrives on a deposit address (pending). */
    depositArrives: (body: Body<'simulateIncomingDeposit'>, options?: CallOptions) =>
      unwrap(this.client.POST('/v1/sandbox/deposits', { body, ...Payments.call(options, true) })),
    simulateDeposit: (id: string, body: Body<'simulateDeposit'>, options?: CallOptions) =>
      unwrap(
        this.client.POST('/v1/sandbox/deposits/{depositId}/simulate', {
          params: { path: { depositId: id } },
          body,
          ...Payments.call(options, true),
        }),
      ),
  };
}
