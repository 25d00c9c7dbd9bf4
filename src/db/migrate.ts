// Forward-only SQL migrations from migrations/NNN_name.sql, applied in order, each under a transaction's advisory lock.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { PROJECT_ROOT } from '../platform/project-root.js';
import { withTransaction } from './pool.js';

export const MIGRATIONS_DIR = path.join(PROJECT_ROOT, 'migrations');

// Any constant works; it only has to be the same for every process of this service.
const MIGRATION_LOCK = 7_201_001;

interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = /^(\d+)_([a-z0-9_]+)\.sql$/.exec(file);
    if (!match) throw new Error(`migration file name '${file}' must look like 001_name.sql`);
    const sql = await readFile(path.join(dir, file), 'utf8');
    migrations.push({
      version: Number(match[1]),
      name: match[2] ?? file,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    });
  }
  return migrations;
}

/**
 * Applies every migration not yet applied; returns the versions it applied. Each transaction here takes the lock for
 * itself (a transaction-level advisory lock), and a migration is applied only after checking, under the lock, that no
 * other process applied it meanwhile: several nodes may start at once. A session-level lock would not do behind
 * PgBouncer in transaction mode, which may run the unlock (and the statements between) in another server session.
 */
export async function migrate(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<number[]> {
  const migrations = await loadMigrations(dir);
  const applied = await withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await tx.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations',
    );
    return new Map(rows.map((r) => [r.version, r.checksum]));
  });
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) {
      checkUnchanged(m, applied.get(m.version));
      continue;
    }
    const ran = await withTransaction(pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const { rows } = await tx.query<{ checksum: string }>(
        'SELECT checksum FROM schema_migrations WHERE version = $1',
        [m.version],
      );
      if (rows[0]) {
        checkUnchanged(m, rows[0].checksum);
        return false;
      }
      try {
        await tx.query(m.sql);
      } catch (err) {
        throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        m.checksum,
      ]);
      return true;
    });
    if (ran) done.push(m.version);
  }
  return done;
}

function checkUnchanged(m: Migration, checksum: string | undefined): void {
  if (checksum !== m.checksum)
    throw new Error(`migration ${m.version}_${m.name} was changed after it was applied; add a new migration instead`);
}

/** For /readyz: whether every migration on disk has been applied, and whether the server is a standby (read-only). */
export async function readiness(pool: pg.Pool, expected: number): Promise<{ applied: boolean; standby: boolean }> {
  const { rows } = await pool.query<{ n: number; standby: boolean }>(
    'SELECT count(*)::int AS n, pg_is_in_recovery() AS standby FROM schema_migrations',
  );
  return { applied: (rows[0]?.n ?? 0) >= expected, standby: rows[0]?.standby ?? false };
}
