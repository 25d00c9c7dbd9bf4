// Webhook endpoints (with their signing secrets), the events API and resend. Delivery itself is the relay's.
// Signing secrets are stored sealed under the secrets key (platform/secret-box.ts), and this file is the one place that
// seals them (creation, rotation) and opens them (`signingSecrets`, for the relay): the database alone cannot sign.
import type { PaymentsEnv } from '../../config.js';
import { withTransaction, type Db, type Queryable } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isSealed, type SecretBox } from '../../platform/secret-box.js';
import { isUuid, uuidv7 } from '../../platform/ids.js';
import type { CursorCodec, ListQuery, Page } from '../../platform/pagination.js';
import { ALL_EVENTS, subscribes } from './event-types.js';
import * as repo from './webhooks.repository.js';
import {
  MAX_ENDPOINTS,
  MAX_PREVIOUS_SECRETS,
  PREVIOUS_SECRET_SECONDS,
  toDeliveryApi,
  toEndpointApi,
  toEventApi,
  type CreateEndpointBody,
  type Delivery,
  type Endpoint,
  type EndpointWithSecret,
  type Event,
  type ListEndpointsQuery,
  type ListEndpointDeliveriesQuery,
  type ListEventsQuery,
  type ResendBody,
  type UpdateEndpointBody,
} from './webhooks.schemas.js';
import { newSecret } from './signing.js';
import { destinationProblem, type LookUpAddresses } from './url-guard.js';
import type { AfterCommit } from '../../platform/after-commit.js';

/** The plaintext of a stored secret. One in plaintext was stored by an earlier version (it is sealed at the next start). */
function reveal(box: SecretBox, stored: string): string {
  return isSealed(stored) ? box.open(stored) : stored;
}

/** A secret as it is stored: sealed (one already sealed is kept as it is). */
function sealed(box: SecretBox, secret: string): string {
  return isSealed(secret) ? secret : box.seal(secret);
}

/**
 * Secrets that still sign at `now`, opened: the current one first, then earlier ones inside their 24 hours. Throws
 * when one cannot be opened (a node still on the old key after `rotate-key`): the relay then logs why and records
 * that attempt as not sent, to be retried.
 */
export function signingSecrets(
  row: Pick<repo.EndpointRow, 'secret' | 'previous_secrets'>,
  now: Date,
  box: SecretBox,
): string[] {
  const live = row.previous_secrets.filter((p) => new Date(p.expires_at) > now).map((p) => p.secret);
  return [row.secret, ...live].map((s) => reveal(box, s));
}

/**
 * Seals, in place, the endpoint secrets still stored in plaintext (by a version before secrets were sealed), in
 * batches of `batchSize` in the order of their ids, each batch its own transaction; returns how many endpoints it
 * sealed. Several nodes starting at once wait for each other's rows and then find them sealed. Maintenance: spans
 * workspaces.
 */
export async function sealPlaintextEndpointSecrets(db: Db, box: SecretBox, batchSize = 500): Promise<number> {
  let total = 0;
  let after = repo.FIRST_ID;
  for (;;) {
    const rows = await withTransaction(db, async (tx) => {
      const found = await repo.lockPlaintextSecrets(tx, after, batchSize);
      await repo.setEndpointSecrets(
        tx,
        found.map((r) => ({
          id: r.id,
          secret: sealed(box, r.secret),
          previous_secrets: r.previous_secrets.map((p) => ({ ...p, secret: sealed(box, p.secret) })),
        })),
      );
      return found;
    });
    total += rows.length;
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < batchSize) return total;
    after = last.id;
  }
}

/**
 * `rotate-key`: every endpoint's secrets (deleted endpoints' too) re-sealed by `reseal`, in the caller's transaction,
 * `batchSize` rows at a time in the order of their ids. Returns how many endpoints.
 */
export async function resealEndpointSecrets(
  tx: Queryable,
  reseal: (value: string) => string,
  batchSize = 500,
): Promise<number> {
  let total = 0;
  let after = repo.FIRST_ID;
  for (;;) {
    const rows = await repo.lockEndpointSecretsAfter(tx, after, batchSize);
    await repo.setEndpointSecrets(
      tx,
      rows.map((r) => ({
        id: r.id,
        secret: reseal(r.secret),
        previous_secrets: r.previous_secrets.map((p) => ({ ...p, secret: reseal(p.secret) })),
      })),
    );
    total += rows.length;
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < batchSize) return total;
    after = last.id;
  }
}

/** These answers show a new signing secret: the copy kept for replays is stored sealed. */
const SECRET_ANSWER = { secret: true };

export class WebhooksService {
  constructor(
    private readonly db: Db,
    private readonly env: PaymentsEnv,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    /** Told when a resend commits, so the relay sends at once rather than at its next poll. */
    private readonly afterCommit: AfterCommit,
    /** Seals the signing secrets before they are stored. */
    private readonly box: SecretBox,
    private readonly lookUpAddresses?: LookUpAddresses,
  ) {}

  private async checkUrl(url: string): Promise<void> {
    const problem = await destinationProblem(url, this.env, this.lookUpAddresses);
    if (problem)
      throw new ApiError('invalid_webhook_url', `The endpoint URL ${problem}.`, {
        errors: [{ field: 'url', message: problem }],
      });
  }

  async create(
    workspaceId: string,
    body: CreateEndpointBody,
    key: string | undefined,
    fingerprint: string,
  ): Promise<IdempotentResult> {
    await this.checkUrl(body.url);
    return this.idempotency.maybe(
      workspaceId,
      key,
      fingerprint,
      async (tx) => {
        // Serialises creations in one workspace, so the limit holds under concurrent requests.
        await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7301))', [workspaceId]);
        if ((await repo.countEndpoints(tx, workspaceId)) >= MAX_ENDPOINTS) {
          throw new ApiError(
            'webhook_endpoint_limit_reached',
            `A workspace may have at most ${MAX_ENDPOINTS} webhook endpoints; delete one first.`,
          );
        }
        const id = uuidv7();
        const now = new Date();
        const secret = newSecret();
        const row: repo.EndpointRow = {
          id,
          workspace_id: workspaceId,
          url: body.url,
          description: body.description ?? null,
          enabled_events: body.enabled_events ?? [ALL_EVENTS],
          status: 'enabled',
          disabled_reason: null,
          secret: this.box.seal(secret),
          previous_secrets: [],
          created_at: now,
          updated_at: now,
        };
        await repo.insertEndpoint(tx, row);
        const shown: EndpointWithSecret = { ...toEndpointApi(row, now), secret };
        return { status: 201, headers: { location: `/v1/webhooks/endpoints/${id}` }, body: JSON.stringify(shown) };
      },
      SECRET_ANSWER,
    );
  }

  async list(workspaceId: string, query: ListEndpointsQuery): Promise<Page<Endpoint>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listEndpoints(this.db, workspaceId, filter);
    const now = new Date();
    return this.cursors.page(rows, limit, (r) => toEndpointApi(r, now));
  }

  async get(workspaceId: string, id: string): Promise<Endpoint> {
    const row = isUuid(id) ? await repo.findEndpoint(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('webhook endpoint');
    return toEndpointApi(row);
  }

  async update(workspaceId: string, id: string, body: UpdateEndpointBody): Promise<Endpoint> {
    if (!isUuid(id)) throw notFound('webhook endpoint');
    if (body.url !== undefined) await this.checkUrl(body.url);
    return withTransaction(this.db, async (tx) => {
      const current = await repo.findEndpoint(tx, workspaceId, id, true);
      if (!current) throw notFound('webhook endpoint');
      const changes: Parameters<typeof repo.updateEndpoint>[3] = {};
      if (body.url !== undefined) changes.url = body.url;
      if (body.description !== undefined) changes.description = body.description;
      if (body.enabled_events !== undefined) changes.enabled_events = body.enabled_events;
      if (body.status === 'disabled' && current.status === 'enabled') {
        changes.status = 'disabled';
        changes.disabled_reason = 'disabled_by_user';
        await repo.failPendingDeliveries(tx, workspaceId, id, 'endpoint disabled');
      } else if (body.status === 'enabled' && current.status === 'disabled') {
        changes.status = 'enabled';
        changes.disabled_reason = null;
      }
      const row = await repo.updateEndpoint(tx, workspaceId, id, changes, new Date());
      if (!row) throw notFound('webhook endpoint');
      return toEndpointApi(row);
    });
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw notFound('webhook endpoint');
    await withTransaction(this.db, async (tx) => {
      if (!(await repo.deleteEndpoint(tx, workspaceId, id, new Date()))) throw notFound('webhook endpoint');
      await repo.failPendingDeliveries(tx, workspaceId, id, 'endpoint deleted');
    });
  }

  /** A new current secret; the one it replaces keeps signing for 24 hours, so receivers can roll without losing events. */
  async rotateSecret(
    workspaceId: string,
    id: string,
    key: string | undefined,
    fingerprint: string,
  ): Promise<IdempotentResult> {
    if (!isUuid(id)) throw notFound('webhook endpoint');
    return this.idempotency.maybe(
      workspaceId,
      key,
      fingerprint,
      async (tx) => {
        const current = await repo.findEndpoint(tx, workspaceId, id, true);
        if (!current) throw notFound('webhook endpoint');
        const now = new Date();
        const expires = new Date(now.getTime() + PREVIOUS_SECRET_SECONDS * 1000).toISOString();
        // At most MAX_PREVIOUS_SECRETS earlier secrets keep signing, so frequent rotation cannot grow the header without bound.
        // They move over sealed as they are (one an earlier version stored in plaintext is sealed on the way).
        const previous = [
          { secret: sealed(this.box, current.secret), expires_at: expires },
          ...current.previous_secrets
            .filter((p) => new Date(p.expires_at) > now)
            .map((p) => ({ ...p, secret: sealed(this.box, p.secret) })),
        ].slice(0, MAX_PREVIOUS_SECRETS);
        const secret = newSecret();
        const row = await repo.updateEndpoint(
          tx,
          workspaceId,
          id,
          { secret: this.box.seal(secret), previous_secrets: previous },
          now,
        );
        if (!row) throw notFound('webhook endpoint');
        const shown: EndpointWithSecret = { ...toEndpointApi(row, now), secret };
        return { status: 200, headers: {}, body: JSON.stringify(shown) };
      },
      SECRET_ANSWER,
    );
  }

  // Events

  async listEvents(workspaceId: string, query: ListEventsQuery): Promise<Page<Event>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listEvents(this.db, workspaceId, filter, query.type, query.object_id);
    return this.cursors.page(rows, limit, toEventApi);
  }

  async getEvent(workspaceId: string, id: string): Promise<Event> {
    const row = isUuid(id) ? await repo.findEvent(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('event');
    return toEventApi(row);
  }

  async deliveries(workspaceId: string, eventId: string, query: ListQuery): Promise<Page<Delivery>> {
    const event = isUuid(eventId) ? await repo.findEvent(this.db, workspaceId, eventId) : undefined;
    if (!event) throw notFound('event');
    const { limit, filter } = this.cursors.filterOf(query);
    return this.deliveryPage(workspaceId, await repo.listDeliveries(this.db, workspaceId, eventId, filter), limit);
  }

  /** A page of deliveries, each with its attempts. */
  private async deliveryPage(workspaceId: string, rows: repo.DeliveryRow[], limit: number): Promise<Page<Delivery>> {
    const attempts = await repo.attemptsOf(
      this.db,
      workspaceId,
      rows.slice(0, limit).map((r) => r.id),
    );
    return this.cursors.page(rows, limit, (r) =>
      toDeliveryApi(
        r,
        attempts.filter((a) => a.delivery_id === r.id),
      ),
    );
  }

  /** An endpoint's delivery log: its deliveries of every event, newest first. */
  async endpointDeliveries(
    workspaceId: string,
    endpointId: string,
    query: ListEndpointDeliveriesQuery,
  ): Promise<Page<Delivery>> {
    const endpoint = isUuid(endpointId) ? await repo.findEndpoint(this.db, workspaceId, endpointId) : undefined;
    if (!endpoint) throw notFound('webhook endpoint');
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listEndpointDeliveries(this.db, workspaceId, endpointId, filter);
    return this.deliveryPage(workspaceId, rows, limit);
  }

  /**
   * A `webhook.test` event, whose data is the endpoint, and one attempt of it to that endpoint only, whatever types it
   * subscribes to. The event is listed with the others and can be resent.
   */
  async sendTest(
    workspaceId: string,
    endpointId: string,
    key: string | undefined,
    fingerprint: string,
  ): Promise<IdempotentResult> {
    if (!isUuid(endpointId)) throw notFound('webhook endpoint');
    const result = await this.idempotency.maybe(workspaceId, key, fingerprint, async (tx) => {
      // Locked as resend locks it, so a concurrent disable or delete fails this delivery too.
      const endpoint = await repo.findEndpoint(tx, workspaceId, endpointId, true);
      if (!endpoint) throw notFound('webhook endpoint');
      if (endpoint.status !== 'enabled') {
        throw new ApiError(
          'webhook_endpoint_disabled',
          'That endpoint is disabled; enable it (PATCH status: enabled) before sending it a test event.',
        );
      }
      const at = new Date();
      const row = await repo.insertTestEvent(tx, workspaceId, {
        eventId: uuidv7(at.getTime()),
        deliveryId: uuidv7(),
        endpointId,
        data: toEndpointApi(endpoint, at),
        at,
      });
      return { status: 202, headers: {}, body: JSON.stringify(toDeliveryApi(row, [])) };
    });
    if (!result.replayed) this.afterCommit.emit({ kind: 'events' });
    return result;
  }

  /** Queues one new attempt of the event to one endpoint, or to every enabled endpoint subscribed to its type. */
  async resend(
    workspaceId: string,
    eventId: string,
    body: ResendBody,
    key: string | undefined,
    fingerprint: string,
  ): Promise<IdempotentResult> {
    if (!isUuid(eventId)) throw notFound('event');
    const result = await this.idempotency.maybe(workspaceId, key, fingerprint, async (tx) => {
      const event = await repo.findEvent(tx, workspaceId, eventId);
      if (!event) throw notFound('event');
      let targets: string[];
      if (body.endpoint_id !== undefined) {
        // Locked like the fan-out locks them, so a concurrent disable or delete fails this delivery too.
        const endpoint = await repo.findEndpoint(tx, workspaceId, body.endpoint_id, true);
        if (!endpoint) throw notFound('webhook endpoint');
        if (endpoint.status !== 'enabled') {
          throw new ApiError(
            'webhook_endpoint_disabled',
            'That endpoint is disabled; enable it (PATCH status: enabled) before resending to it.',
          );
        }
        targets = [endpoint.id];
      } else {
        const endpoints = await repo.enabledEndpoints(tx, [workspaceId], true);
        targets = endpoints.filter((e) => subscribes(e.enabled_events, event.type)).map((e) => e.id);
        if (targets.length === 0) {
          throw new ApiError(
            'no_webhook_endpoints',
            `No enabled endpoint subscribes to ${event.type}; name one with endpoint_id or add one.`,
          );
        }
      }
      const rows = await repo.insertResendDeliveries(
        tx,
        workspaceId,
        eventId,
        targets.map((endpointId) => ({ id: uuidv7(), endpointId })),
        new Date(),
      );
      return { status: 202, headers: {}, body: JSON.stringify({ data: rows.map((r) => toDeliveryApi(r, [])) }) };
    });
    if (!result.replayed) this.afterCommit.emit({ kind: 'events' });
    return result;
  }
}
