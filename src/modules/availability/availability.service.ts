// Rail availability: each market, rail and direction judged from what the service saw over a sliding window (operator
// errors, time-outs, time to success) or set down by planned maintenance; a change announced to the workspaces that
// use the rail; and each node's in-memory snapshot of the judgement, which the create path consults without a
// statement (docs/guides/availability.md).
import type { FastifyBaseLogger } from 'fastify';
import type { AvailabilityConfig } from '../../config.js';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { ApiError } from '../../platform/errors.js';
import { uuidv7 } from '../../platform/ids.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { recordEvent } from '../events/events.repository.js';
import {
  currentMaintenance,
  deleteMaintenance,
  lockJudgement,
  readStates,
  saveStates,
  upsertMaintenance,
  windowStats,
  workspacesUsingRail,
  type MaintenanceRow,
  type StateRow,
  type WindowStats,
} from './availability.repository.js';
import {
  type AvailabilityList,
  type AvailabilityReason,
  type AvailabilityStatus,
  type Direction,
  type DirectionAvailability,
  type Maintenance,
  type RailAvailability,
  type SetMaintenanceBody,
} from './availability.schemas.js';

export const AVAILABILITY_CHANGED = 'rail.availability_changed';

/** What the judgement of one direction says. */
export interface Judgement {
  status: AvailabilityStatus;
  reason: AvailabilityReason;
  detail: string;
}

const pct = (n: number, of: number): number => Math.round((n * 1000) / of) / 10;

/**
 * The rule, written once: maintenance under way is down; too few attempts is not judged (operational); then the share
 * of operator failures (down at `downPercent`, degraded at `degradedPercent`), then a slow median (degraded).
 */
export function judge(
  config: AvailabilityConfig,
  stats: Pick<WindowStats, 'attempts' | 'failures' | 'median_ms'>,
  maintenance: MaintenanceRow | undefined,
  now: Date,
): Judgement {
  if (maintenance && maintenance.starts_at <= now && now < maintenance.ends_at)
    return {
      status: 'down',
      reason: 'maintenance',
      detail: `Planned maintenance until ${maintenance.ends_at.toISOString()}: ${maintenance.note || 'no note'}.`,
    };
  if (!config.judgeTraffic)
    return {
      status: 'operational',
      reason: 'traffic_not_judged',
      detail: 'This environment judges rails by planned maintenance only.',
    };
  const { attempts, failures, median_ms } = stats;
  if (attempts < config.minAttempts)
    return {
      status: 'operational',
      reason: 'insufficient_traffic',
      detail: `${attempts} attempt(s) with an outcome in the last ${config.windowSeconds} s; at least ${config.minAttempts} are needed to judge.`,
    };
  const share = (failures * 100) / attempts;
  const failing = `${failures} of ${attempts} attempts (${pct(failures, attempts)} %) in the last ${config.windowSeconds} s failed at the operator (errors or time-outs)`;
  if (share >= config.downPercent)
    return { status: 'down', reason: 'operator_errors', detail: `${failing}; down from ${config.downPercent} %.` };
  if (share >= config.degradedPercent)
    return {
      status: 'degraded',
      reason: 'operator_errors',
      detail: `${failing}; degraded from ${config.degradedPercent} %.`,
    };
  if (median_ms !== null && median_ms > config.slowSeconds * 1000)
    return {
      status: 'degraded',
      reason: 'slow',
      detail: `Median time to success ${Math.round(median_ms / 1000)} s in the last ${config.windowSeconds} s; degraded above ${config.slowSeconds} s.`,
    };
  return {
    status: 'operational',
    reason: 'normal',
    detail: `${failures} of ${attempts} attempts failed at the operator in the last ${config.windowSeconds} s.`,
  };
}

/** A direction that is down, as the create path sees it: how long to wait and why. */
export interface Unavailable {
  retryAfterSeconds: number;
  detail: string;
}

interface SnapshotEntry {
  status: AvailabilityStatus;
  detail: string;
  /** The end of the maintenance that makes it down, if that is why. */
  maintenanceEndsAt: Date | undefined;
}

const key = (market: string, rail: string, direction: Direction): string => `${market}/${rail}/${direction}`;

export class AvailabilityService {
  /** This node's copy of the judgement: what `unavailable` answers from, with no statement. */
  private snapshot = new Map<string, SnapshotEntry>();
  private snapshotAt: Date | undefined;
  /** Reads of the judgement begun on this node, and the number of the one the snapshot holds. */
  private readsBegun = 0;
  private filledFrom = 0;
  /** How many times the snapshot was read from the database (tests show the create path does not read it). */
  refreshes = 0;

  constructor(
    /** The API's pool: the list and the admin's changes. */
    private readonly db: Db,
    /** The background's pool: the judgement and the snapshot's refresh. */
    private readonly workerDb: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly config: AvailabilityConfig,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Every (market, rail, direction) the catalogue offers. */
  private directions(): { market: string; rail: string; direction: Direction }[] {
    const out: { market: string; rail: string; direction: Direction }[] = [];
    for (const market of this.catalogue.marketCodes()) {
      const rails = this.catalogue.market(market)?.rails ?? {};
      for (const rail of Object.keys(rails).sort()) {
        out.push({ market, rail, direction: 'collections' });
        if (rails[rail]?.payouts !== false) out.push({ market, rail, direction: 'payouts' });
        if (rails[rail]?.refunds !== false) out.push({ market, rail, direction: 'refunds' });
      }
    }
    return out;
  }

  /**
   * Judges every rail and saves the judgement, in one transaction under the judgement's lock: by the worker on one
   * node at a time (`wait` false: another node judging now skips this run), or after an admin's change (`wait`
   * true). A status that changed is announced to the workspaces that use the rail, in the same transaction.
   * Answers whether it judged.
   */
  async judgeAll(wait = false): Promise<boolean> {
    const judged = await withTransaction(this.workerDb, async (tx) => {
      if (!(await lockJudgement(tx, wait))) return false as const;
      const now = this.now();
      const from = new Date(now.getTime() - this.config.windowSeconds * 1000);
      const timedOutBefore = new Date(now.getTime() - this.config.timeoutSeconds * 1000);
      const [stats, before, maintenance] = [
        this.config.judgeTraffic ? await windowStats(tx, from, timedOutBefore) : [],
        await readStates(tx),
        await currentMaintenance(tx, now),
      ];
      const statsBy = new Map(stats.map((s) => [key(s.market, s.rail, s.direction), s]));
      const beforeBy = new Map(before.map((s) => [key(s.market, s.rail, s.direction), s]));
      const maintenanceBy = new Map(maintenance.map((m) => [`${m.market}/${m.rail}`, m]));
      const next: StateRow[] = [];
      // The rails with a direction whose status changed: each announced once, with all its directions.
      const changed = new Set<string>();
      for (const { market, rail, direction } of this.directions()) {
        const s = statsBy.get(key(market, rail, direction)) ?? { attempts: 0, failures: 0, median_ms: null };
        const verdict = judge(this.config, s, maintenanceBy.get(`${market}/${rail}`), now);
        const old = beforeBy.get(key(market, rail, direction));
        next.push({
          market,
          rail,
          direction,
          id: old?.id ?? uuidv7(now.getTime()),
          ...verdict,
          since: old && old.status === verdict.status ? old.since : now,
          attempts: s.attempts,
          failures: s.failures,
          median_ms: s.median_ms,
          computed_at: now,
        });
        // A rail seen for the first time starts where every rail is assumed to be: operational.
        if ((old?.status ?? 'operational') !== verdict.status) changed.add(`${market}/${rail}`);
      }
      await saveStates(tx, next);
      const nextBy = new Map(next.map((s) => [key(s.market, s.rail, s.direction), s]));
      for (const name of changed) {
        const [market = '', rail = ''] = name.split('/');
        await this.announce(tx, this.railView(market, rail, nextBy, maintenanceBy, now), nextBy, now);
      }
      return { next, maintenance, now };
    });
    if (judged === false) return false;
    // Filled once committed, numbered after every read begun before the commit: such a read may have seen the old rows.
    this.fill(judged.next, judged.maintenance, judged.now, ++this.readsBegun);
    return true;
  }

  /**
   * `rail.availability_changed` to each workspace that used the rail within `notifyDays`: its data is the rail as
   * GET /v1/availability shows it; the object is named by the id of the rail's collections row.
   */
  private async announce(tx: Tx, view: RailAvailability, states: Map<string, StateRow>, now: Date): Promise<void> {
    const since = new Date(now.getTime() - this.config.notifyDays * 86_400_000);
    const workspaces = await workspacesUsingRail(tx, view.market, view.rail, since);
    const objectId = states.get(key(view.market, view.rail, 'collections'))?.id ?? uuidv7(now.getTime());
    this.log.warn(
      {
        market: view.market,
        rail: view.rail,
        collections: view.collections.status,
        payouts: view.payouts?.status,
        refunds: view.refunds?.status,
        workspaces: workspaces.length,
      },
      'rail availability changed',
    );
    for (const workspaceId of workspaces)
      await recordEvent(tx, workspaceId, {
        type: AVAILABILITY_CHANGED,
        objectType: 'rail_availability',
        objectId,
        data: view,
        at: now,
      });
  }

  /** One rail as the API shows it, from the judgement rows and maintenance (a direction not judged yet: operational). */
  private railView(
    market: string,
    rail: string,
    stateBy: Map<string, StateRow>,
    maintenanceBy: Map<string, MaintenanceRow>,
    now: Date,
  ): RailAvailability {
    const offered = this.catalogue.market(market)?.rails[rail];
    const view = (direction: Direction): DirectionAvailability => {
      const s = stateBy.get(key(market, rail, direction));
      return s
        ? toDirection(s)
        : {
            status: 'operational',
            reason: 'insufficient_traffic',
            detail: 'Not judged yet.',
            since: now.toISOString(),
            attempts: 0,
            failures: 0,
            median_seconds: null,
          };
    };
    const m = maintenanceBy.get(`${market}/${rail}`);
    return {
      market,
      rail,
      collections: view('collections'),
      payouts: offered?.payouts === false ? null : view('payouts'),
      refunds: offered?.refunds === false ? null : view('refunds'),
      maintenance: m ? toMaintenance(m) : null,
    };
  }

  /** Reads the judgement into this node's snapshot: the worker's job on every node, every `refreshMs`. */
  async refresh(): Promise<void> {
    const read = ++this.readsBegun;
    const now = this.now();
    const [states, maintenance] = [await readStates(this.workerDb), await currentMaintenance(this.workerDb, now)];
    this.fill(states, maintenance, now, read);
  }

  /**
   * Replaces the snapshot, unless a later one is in already: `read` numbers when its rows were read (refresh) or
   * committed (judgement), so a refresh that read before a judgement here committed never puts the old rows back.
   */
  private fill(states: readonly StateRow[], maintenance: readonly MaintenanceRow[], now: Date, read: number): void {
    if (read < this.filledFrom) return;
    this.filledFrom = read;
    const maintenanceBy = new Map(maintenance.map((m) => [`${m.market}/${m.rail}`, m]));
    const snapshot = new Map<string, SnapshotEntry>();
    for (const s of states) {
      const m = s.reason === 'maintenance' ? maintenanceBy.get(`${s.market}/${s.rail}`) : undefined;
      snapshot.set(key(s.market, s.rail, s.direction), {
        status: s.status,
        detail: s.detail,
        maintenanceEndsAt: m?.ends_at,
      });
    }
    this.snapshot = snapshot;
    this.snapshotAt = now;
    this.refreshes += 1;
  }

  /** When this node's snapshot was last filled; undefined before the first time. */
  snapshotTakenAt(): Date | undefined {
    return this.snapshotAt;
  }

  /**
   * Whether new work in `direction` on the rail must wait, from this node's snapshot (no statement): the rail is down.
   * Retry after the maintenance's end, or after `retryAfterSeconds` for a rail down by its traffic.
   */
  unavailable(market: string, rail: string, direction: Direction): Unavailable | undefined {
    const entry = this.snapshot.get(key(market, rail, direction));
    if (entry?.status !== 'down') return undefined;
    const untilEnd =
      entry.maintenanceEndsAt === undefined
        ? this.config.retryAfterSeconds
        : Math.max(1, Math.ceil((entry.maintenanceEndsAt.getTime() - this.now().getTime()) / 1000));
    return { retryAfterSeconds: untilEnd, detail: entry.detail };
  }

  /** GET /v1/availability: the saved judgement of every rail the catalogue offers, with maintenance not yet over. */
  async list(): Promise<AvailabilityList> {
    const now = this.now();
    const [states, maintenance] = [await readStates(this.db), await currentMaintenance(this.db, now)];
    const stateBy = new Map(states.map((s) => [key(s.market, s.rail, s.direction), s]));
    const maintenanceBy = new Map(maintenance.map((m) => [`${m.market}/${m.rail}`, m]));
    const data: RailAvailability[] = [];
    for (const market of this.catalogue.marketCodes()) {
      const rails = this.catalogue.market(market)?.rails ?? {};
      for (const rail of Object.keys(rails).sort()) data.push(this.railView(market, rail, stateBy, maintenanceBy, now));
    }
    const computed = states.reduce<Date | undefined>((a, s) => (a && a > s.computed_at ? a : s.computed_at), undefined);
    return { data, window_seconds: this.config.windowSeconds, computed_at: computed?.toISOString() ?? null };
  }

  /** The rail, checked against the catalogue: 404 for a market or rail it does not have (the path names nothing). */
  private checkRail(market: string, rail: string): void {
    const found = this.catalogue.market(market);
    if (!found || !this.catalogue.rail(found, rail))
      throw new ApiError('not_found', `The catalogue has no rail ${market}/${rail}.`);
  }

  /** PUT /v1/admin/maintenance/{market}/{rail}: sets (or replaces) the rail's maintenance, judged at once. */
  async setMaintenance(market: string, rail: string, body: SetMaintenanceBody): Promise<Maintenance> {
    this.checkRail(market, rail);
    const startsAt = new Date(body.starts_at);
    const endsAt = new Date(body.ends_at);
    const now = this.now();
    const errors = [
      ...(endsAt <= startsAt ? [{ field: 'ends_at', message: 'must be after starts_at' }] : []),
      ...(endsAt <= now ? [{ field: 'ends_at', message: 'must be in the future' }] : []),
    ];
    if (errors.length > 0) throw new ApiError('validation_failed', 'The maintenance window is not valid.', { errors });
    const row: MaintenanceRow = { market, rail, starts_at: startsAt, ends_at: endsAt, note: body.note ?? '' };
    await upsertMaintenance(this.db, row, now);
    await this.judgeAll(true);
    return toMaintenance(row);
  }

  /** DELETE /v1/admin/maintenance/{market}/{rail}: ends it now (404 when the rail has none), judged at once. */
  async clearMaintenance(market: string, rail: string): Promise<void> {
    this.checkRail(market, rail);
    if (!(await deleteMaintenance(this.db, market, rail)))
      throw new ApiError('not_found', `No maintenance is set for ${market}/${rail}.`);
    await this.judgeAll(true);
  }
}

function toDirection(s: StateRow): DirectionAvailability {
  return {
    status: s.status,
    reason: s.reason,
    detail: s.detail,
    since: s.since.toISOString(),
    attempts: s.attempts,
    failures: s.failures,
    median_seconds: s.median_ms === null ? null : s.median_ms / 1000,
  };
}

function toMaintenance(m: MaintenanceRow): Maintenance {
  return {
    starts_at: m.starts_at.toISOString(),
    ends_at: m.ends_at.toISOString(),
    note: m.note,
  };
}
