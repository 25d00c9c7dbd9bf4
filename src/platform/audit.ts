// The audit log's recording (docs/guides/audit-log.md): one hook for every route that declares
// `config: { audit: { action, objectType } }`, so adding a route to the log is one line in its options. Right before
// the answer leaves, the hook writes one row: who (the token's credential, or the dashboard session's), what (the
// action and the object, its id from the route's params or the answer), the status answered, the client's address and
// the request id. The row is written after the route's own transaction, not inside it: a failure to record is
// logged and the client still gets its answer. The audit module writes the row; composition.ts hands it in, so this
// file imports no module.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isUuid } from './ids.js';

/**
 * What kind of actor did it: an API token, a dashboard member, a dashboard session opened with a pasted token (the
 * break-glass path), the admin token, or nobody known (a failed sign-in).
 */
export type ActorType = 'api_key' | 'member' | 'dashboard' | 'admin' | 'anonymous';

/** A route's place in the audit log. */
export interface AuditRoute {
  /** A stable dotted name: `refund.create`, `credential.rotate`. */
  action: string;
  /** What the object is: `refund`, `credential`, `webhook_endpoint`. */
  objectType: string;
  /**
   * Where the object's id is: `answer.<field>` (dotted for nested) or `params.<name>`. By default the answer's `id`,
   * else the route's only path parameter.
   */
  objectId?: string;
  /** Where the workspace the object belongs to is, when not the token's (the admin workspace API): same syntax. */
  workspaceId?: string;
  /**
   * For an answer that made many objects (a bulk commit): beside the request's own row, one row per object, with this
   * action. `list` is the answer's array (`answer.data`), `objectId` the id's path inside an element; an element
   * without one (refused) or marked `replayed: true` (nothing written again) has no row.
   */
  each?: { action: string; list: string; objectId: string };
}

export interface AuditEntry {
  workspaceId: string;
  occurredAt: Date;
  actorType: ActorType;
  /** The credential or the member that acted; null when nobody is known (a failed sign-in). */
  actorId: string | null;
  action: string;
  objectType: string;
  objectId: string | null;
  status: number;
  clientAddress: string | null;
  requestId: string;
}

export type RecordAudit = (entry: AuditEntry) => Promise<void>;

/**
 * What a handler that has no token to go by sets itself (the dashboard's sign-in): the workspace and actor, and the
 * action when it differs from the route's (a failed sign-in).
 */
export interface AuditNote {
  workspaceId: string;
  actorType: ActorType;
  actorId: string | null;
  action?: string;
  objectId?: string | null;
}

/** Where a failed sign-in whose token names no workspace is recorded. */
export const NO_WORKSPACE = '00000000-0000-0000-0000-000000000000';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's audit action: every answer to an authenticated request is recorded (src/platform/audit.ts). */
    audit?: AuditRoute;
  }
  interface FastifyRequest {
    auditNote: AuditNote | undefined;
  }
}

/**
 * A request made on behalf of someone elsewhere: the dashboard's in-process API calls, for a person's browser. A
 * member's session names the member as the actor; a session opened with a pasted token leaves the token's credential.
 */
interface Channel {
  actorType: 'dashboard' | 'member';
  /** The member, for a member's session. */
  actorId?: string;
  clientAddress: string;
}
const channel = new AsyncLocalStorage<Channel>();

/**
 * Runs `work` (the dashboard's in-process API calls) so that what it writes is recorded as done through the dashboard,
 * from the browser's address. Carried by async context, so no request from outside can claim it.
 */
export function actingThrough<T>(via: Channel, work: () => Promise<T>): Promise<T> {
  // Awaited inside: a thenable (fastify's inject) starts its work when awaited, and must be awaited in the context.
  return channel.run(via, async () => await work());
}

const ACTION = /^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/;
const PLACE = /^(answer|params)(\.[A-Za-z_][A-Za-z0-9_]*)+$/;

export function registerAudit(app: FastifyInstance, record: RecordAudit): void {
  app.decorateRequest('auditNote', undefined);
  // A misspelt action or place stops the boot, like a route without audiences.
  app.addHook('onRoute', (route) => {
    const audit = route.config?.audit;
    if (audit === undefined) return;
    const bad = [
      !ACTION.test(audit.action) && `action '${audit.action}'`,
      audit.objectId !== undefined && !PLACE.test(audit.objectId) && `objectId '${audit.objectId}'`,
      audit.workspaceId !== undefined && !PLACE.test(audit.workspaceId) && `workspaceId '${audit.workspaceId}'`,
      audit.each !== undefined && !ACTION.test(audit.each.action) && `each.action '${audit.each.action}'`,
      audit.each !== undefined && !PLACE.test(audit.each.list) && `each.list '${audit.each.list}'`,
    ].filter(Boolean);
    if (bad.length > 0) throw new Error(`route ${route.url}: config.audit has a bad ${bad.join(', ')}`);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const rule = request.routeOptions.config?.audit;
    if (rule === undefined) return payload;
    let entry: AuditEntry | undefined;
    try {
      entry = entryOf(rule, request, reply, payload);
      if (entry) await record(entry);
      if (entry && rule.each) for (const item of itemEntries(rule.each, entry, payload)) await record(item);
    } catch (error) {
      // Never a failure for the client: its write stands. The log says what was not recorded.
      const err = error as Error & { code?: string };
      request.log.error(
        { err: { type: err.name, message: err.message, code: err.code }, audit: entry ?? { action: rule.action } },
        'audit event not recorded',
      );
    }
    return payload;
  });
}

function entryOf(
  rule: AuditRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): AuditEntry | undefined {
  const note = request.auditNote;
  const auth = request.authContext;
  // Nobody known (no token, or one refused: 401 and 403 from the auth hook) is not recorded: a flood of bad tokens
  // must not fill the log. Nor is a 429 (nothing was tried), nor an idempotent replay (nothing was written again).
  if (!note && !auth) return undefined;
  if (reply.statusCode === 429 || reply.getHeader('idempotent-replayed') === 'true') return undefined;
  const via = channel.getStore();
  const status = reply.statusCode;
  let answer: unknown;
  const answerOf = (): unknown => {
    if (answer === undefined) answer = status < 300 && typeof payload === 'string' ? parseJson(payload) : null;
    return answer;
  };
  const find = (place: string): string | undefined => {
    const [root, ...path] = place.split('.');
    const value = valueAt(root === 'params' ? request.params : answerOf(), path);
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const params = Object.keys((request.params ?? {}) as object);
  const objectId =
    note?.objectId !== undefined
      ? note.objectId
      : rule.objectId !== undefined
        ? find(rule.objectId)
        : (find('answer.id') ?? (params.length === 1 ? find(`params.${params[0]}`) : undefined));
  const target = rule.workspaceId === undefined ? undefined : find(rule.workspaceId);
  const workspaceId = note?.workspaceId ?? (target !== undefined && isUuid(target) ? target : auth?.workspaceId);
  if (workspaceId === undefined) return undefined;
  return {
    workspaceId,
    occurredAt: new Date(),
    actorType: note?.actorType ?? (via ? via.actorType : auth?.audience === 'admin' ? 'admin' : 'api_key'),
    actorId: note ? note.actorId : (via?.actorId ?? auth?.credentialId ?? null),
    action: note?.action ?? rule.action,
    objectType: rule.objectType,
    objectId: objectId === null || objectId === undefined ? null : objectId.slice(0, 200),
    status,
    clientAddress: via?.clientAddress ?? request.ip ?? null,
    requestId: request.id,
  };
}

/** One row per object an answer made (`each`): the request's row with the item's action and object. */
function itemEntries(each: NonNullable<AuditRoute['each']>, request: AuditEntry, payload: unknown): AuditEntry[] {
  if (request.status >= 300 || typeof payload !== 'string') return [];
  const list = valueAt(parseJson(payload), each.list.split('.').slice(1));
  if (!Array.isArray(list)) return [];
  return list.flatMap((element) => {
    const id = valueAt(element, each.objectId.split('.'));
    if (typeof id !== 'string' || id === '' || valueAt(element, ['replayed']) === true) return [];
    return [{ ...request, action: each.action, objectId: id.slice(0, 200) }];
  });
}

/** The value at `path` inside `value` (object keys, one per step); undefined where a step finds no object. */
function valueAt(value: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>(
    (v, key) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined),
    value,
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
