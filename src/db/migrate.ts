// Forward-only SQL migrations from migrations/NNN_name.sql, applied in order under an advisory lock.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { PROJECT_ROOT } from '../platform/project-root.js';

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

/** Applies every migration not yet applied; returns the versions it applied. */
export async function migrate(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<number[]> {
  const migrations = await loadMigrations(dir);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations',
    );
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    const done: number[] = [];
    for (const m of migrations) {
      const previous = applied.get(m.version);
      if (previous !== undefined) {
        if (previous !== m.checksum) {
          throw new Error(
            `migration ${m.version}_${m.name} was changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          m.checksum,
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      done.push(m.version);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    client.release();
  }
}

/** True when every migration on disk has been applied (used by /readyz). */
export async function migrationsApplied(pool: pg.Pool, expected: number): Promise<boolean> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  return (rows[0]?.n ?? 0) >= expected;
}
