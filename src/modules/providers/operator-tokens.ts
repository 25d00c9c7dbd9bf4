// Operator access tokens shared by every node: one per connector and scope, kept sealed in `operator_tokens` with its
// expiry and renewed by one node at a time under a lease. Daraja's FAQ says a new token invalidates the previous one,
// so nodes that each fetched their own renewed each other's away (intermittent 404.001.03 "Invalid Access Token");
// MoMo and Airtel follow the same path. See docs/connectors/README.md#access-tokens.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../../db/errors.js';
import type { Db } from '../../db/pool.js';
import { SecretBoxError, type SecretBox } from '../../platform/secret-box.js';
import * as repo from './operator-tokens.repository.js';
import { ProviderError } from './provider.js';

/** Margin before an access token's stated expiry at which a new one is fetched. */
const TOKEN_MARGIN_MS = 60_000;
/** How often a node waiting for another's renewal reads the row again. */
const POLL_MS = 100;
/** While the database is unavailable, how long a held token is used before the database is asked again. */
const DATABASE_RETRY_MS = 5000;

export interface FetchedToken {
  token: string;
  expiresInSeconds: number;
}

/** Where a connector's token is kept for all nodes. */
export interface SharedTokenStore {
  db: Db;
  box: SecretBox;
  /** The connector's name (PROVIDERS_FILE) and the token's scope (MoMo's product; `default` for the others). */
  connector: string;
  scope: string;
  /** Time limit of one call to the operator: bounds the lease and how long other nodes wait for it. */
  timeoutMs: number;
  log: FastifyBaseLogger;
}

interface Held {
  token: string;
  /** The sealed form this node read or stored, or undefined for a token fetched while the database was away. */
  sealed: string | undefined;
  /** Local times (ms): renew from `renewAt`; the operator's stated expiry at `expiresAt`. */
  renewAt: number;
  expiresAt: number;
}

/** When to renew a token of that lifetime: a minute before it expires, or at half a lifetime shorter than two minutes (Airtel's 180 s). */
function renewAfterMs(lifetimeMs: number): number {
  return Math.max(lifetimeMs / 2, lifetimeMs - TOKEN_MARGIN_MS);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One access token, kept in memory until it is due. With a shared store its source is the database: a token stored
 * by any node is used until its renew_at; past it, one node takes the lease and fetches a new one while the others
 * wait and take it. Without one (and while the database is away) it is fetched by this process alone. Calls waiting
 * at the same moment share one read or fetch.
 */
export class TokenCache {
  private current: Held | undefined;
  private pending: Promise<string> | undefined;
  /**
   * The token the operator last refused here: a read of the row that still finds it (another call of this process
   * read it before this one marked it due) marks it due rather than use it again.
   */
  private refused: string | undefined;
  /** This cache's name in the lease: the host, the process and a random part (two caches never share one). */
  private readonly holder = `${os.hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;

  constructor(
    private readonly fetchToken: () => Promise<FetchedToken>,
    private readonly shared?: SharedTokenStore,
  ) {}

  get(): Promise<string> {
    if (this.current && Date.now() < this.current.renewAt) return Promise.resolve(this.current.token);
    this.pending ??= this.refresh().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /**
   * The operator refused `token`. If it is the one held, it is dropped; if the row still holds it, the row is marked
   * due so that exactly one node renews it. A row already holding a newer token is left alone: the next `get` reads
   * it (renewing again is what made nodes renew each other's tokens away).
   */
  async invalidate(token: string): Promise<void> {
    this.refused = token;
    const held = this.current;
    if (held?.token !== token) return;
    this.current = undefined;
    if (this.shared === undefined || held.sealed === undefined) return;
    const { db, connector, scope } = this.shared;
    try {
      await repo.markDue(db, connector, scope, held.sealed);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      // The next `get` finds the database away too and fetches a token of its own.
    }
  }

  private async refresh(): Promise<string> {
    if (this.shared === undefined) return this.fetchHere();
    try {
      return await this.fromDatabase(this.shared);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      // The database is away: calls to the operator must not stop with it. The token held is used until its stated
      // expiry; past it, this process fetches one of its own (other nodes may do the same, and on Daraja renew each
      // other's away, until the database is back and they share one again).
      const held = this.current;
      if (held && Date.now() < held.expiresAt) {
        // The database is asked again after a pause, not before every call (each try may wait its connect time-out).
        held.renewAt = Math.min(held.expiresAt, Date.now() + DATABASE_RETRY_MS);
        this.shared.log.warn(
          { scope: this.shared.scope },
          'operator token: the database is unavailable; the token held is used until it expires',
        );
        return held.token;
      }
      this.shared.log.warn(
        { scope: this.shared.scope },
        'operator token: the database is unavailable; this process fetches a token of its own',
      );
      return this.fetchHere();
    }
  }

  /** The per-process path: a token fetched by this process and kept in its memory only. */
  private async fetchHere(): Promise<string> {
    const { token, expiresInSeconds } = await this.fetchToken();
    const lifetimeMs = expiresInSeconds * 1000;
    const now = Date.now();
    this.current = { token, sealed: undefined, renewAt: now + renewAfterMs(lifetimeMs), expiresAt: now + lifetimeMs };
    return token;
  }

  /** The stored token while it is not due; else a new one, fetched by this node under the lease or by another. */
  private async fromDatabase(store: SharedTokenStore): Promise<string> {
    const { db, box, connector, scope, timeoutMs } = store;
    // A renewal takes at most one operator call and a write; past this the lease holder is presumed gone.
    const leaseMs = timeoutMs + 5000;
    const deadline = Date.now() + timeoutMs + 1000;
    for (;;) {
      const row = await repo.readToken(db, connector, scope);
      if (row?.sealed != null && row.renewInMs > 0) {
        let token: string | undefined;
        try {
          token = box.open(row.sealed);
        } catch (err) {
          if (!(err instanceof SecretBoxError)) throw err;
          // Sealed under a key this process no longer has (dropped by a second rotate-key): renew it.
          store.log.warn({ scope, err: err.message }, 'operator token: the stored token cannot be opened; renewing it');
          await repo.markDue(db, connector, scope, row.sealed);
          continue;
        }
        if (token === this.refused) {
          await repo.markDue(db, connector, scope, row.sealed);
          continue;
        }
        const now = Date.now();
        this.current = { token, sealed: row.sealed, renewAt: now + row.renewInMs, expiresAt: now + row.expiresInMs };
        return token;
      }
      if (!row?.leased && (await repo.takeLease(db, connector, scope, this.holder, leaseMs)))
        return this.renew(store, leaseMs);
      if (Date.now() > deadline)
        throw new ProviderError(
          `${connector}: the ${scope} access token has been renewed by another node for over ${timeoutMs + 1000} ms`,
        );
      await sleep(POLL_MS);
    }
  }

  /** Under this node's lease: fetches a token from the operator (no transaction is open), stores it sealed. */
  private async renew(store: SharedTokenStore, leaseMs: number): Promise<string> {
    const { db, box, connector, scope, log } = store;
    let fetched: FetchedToken;
    try {
      fetched = await this.fetchToken();
    } catch (err) {
      await repo.releaseLease(db, connector, scope, this.holder).catch((releaseErr: unknown) => {
        // The lease then lapses by itself after leaseMs.
        log.warn({ scope, err: (releaseErr as Error).message, leaseMs }, 'operator token: lease not released');
      });
      throw err;
    }
    const lifetimeMs = fetched.expiresInSeconds * 1000;
    const renewInMs = renewAfterMs(lifetimeMs);
    const sealed = box.seal(fetched.token);
    const now = Date.now();
    this.current = { token: fetched.token, sealed, renewAt: now + renewInMs, expiresAt: now + lifetimeMs };
    try {
      if (!(await repo.storeToken(db, connector, scope, this.holder, sealed, lifetimeMs, renewInMs))) {
        this.current.sealed = undefined;
        log.warn({ scope }, 'operator token: the renewal lease lapsed before the token was stored; kept in memory');
      }
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      // The operator gave the token: use it rather than fetch another (the lease lapses by itself).
      this.current.sealed = undefined;
      log.warn({ scope }, 'operator token: the database is unavailable; the new token is kept in memory');
    }
    return fetched.token;
  }
}
