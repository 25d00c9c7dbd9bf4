// How the schema would distribute by workspace_id on Citus (docs/operations.md, "The schema on Citus"). Citus
// enforces a unique key (primary keys included) only when it contains the distribution column, and a distribution
// column cannot be NULL. This checks the migrated schema: every table carries a NOT NULL workspace_id and every unique
// key contains it, except the exceptions listed here, each with what it would be on Citus; a new table or key that
// breaks the rule fails until it is listed (here and in the doc, which must list the same).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { PROJECT_ROOT } from '../src/platform/project-root.js';
import type { ScratchDatabase } from './helpers/database.js';
import { createTestDatabase } from './helpers/harness.js';

/** Tables that would not be distributed by workspace_id, and what each would be instead. */
const NOT_BY_WORKSPACE: Record<string, string> = {
  workspaces: 'reference table',
  service_secrets: 'reference table',
  schema_migrations: 'local table (coordinator)',
  rate_sources: 'reference table',
  rate_records: 'reference table; drop the foreign key posted_by → credentials',
  offramp_routes: 'reference table; drop the foreign key created_by → credentials',
  deposit_addresses: 'reference table (workspace_id is NULL until an address is assigned, then updated)',
  connector_queries: 'distributed by query_id, not co-located',
  dashboard_signin_nonces: 'distributed by nonce_hash, not co-located',
  dashboard_sign_in_failures: 'distributed by key_hash, not co-located',
  dashboard_second_steps: 'distributed by id_hash, not co-located; drop the foreign key → members',
  operator_tokens: 'reference table',
  operator_float: 'reference table',
  operator_float_reads: 'reference table',
  rail_availability: 'reference table',
  rail_maintenance: 'reference table',
};

/** Tables distributed by workspace_id whose primary key is the row's own id alone: on Citus, (workspace_id, id). */
const OWN_ID_KEYS: Record<string, string> = {
  autoconvert_credits: 'id',
  beneficiaries: 'id',
  checkout_sessions: 'id',
  collections: 'id',
  credentials: 'id',
  deposits: 'id',
  events: 'id',
  ledger_lines: 'id',
  ledger_postings: 'id',
  outbox: 'id',
  payouts: 'id',
  refunds: 'id',
  risk_signals: 'id',
  sandbox_operations: 'object_id',
  webhook_attempts: 'id',
  webhook_deliveries: 'id',
  webhook_endpoints: 'id',
};

/** Other unique keys without workspace_id on tables distributed by it (by index name), and what each would become. */
const OTHER_KEYS: Record<string, string> = {
  autoconvert_credits_deposit_id_key: 'widen',
  checkout_sessions_token_key: 'widen; the payer page finds a session by token alone',
  collections_provider_reference: 'widen; the guard across workspaces needs a table of its own',
  dashboard_sessions_pkey: 'widen; the cookie carries the workspace id',
  deposits_network_tx_hash_log_index_deposit_address_id_key: 'widen',
  members_email_key: 'a table of its own distributed by email: sign-in finds a member by email alone',
  provider_notices_pkey: 'widen',
  refunds_one_in_progress: 'widen',
  refunds_one_successful: 'widen',
  sandbox_operations_reference_key: 'widen',
  webhook_deliveries_once: 'widen',
};

/**
 * Tables one statement reads together on the hot path, each distributed by workspace_id so that the statement stays on
 * one shard: the token check reads the credential, its member's role and the workspace's active configuration.
 */
const READ_TOGETHER: readonly string[] = ['credentials', 'members', 'workspace_configurations'];

interface Table {
  name: string;
  /** null: no workspace_id column; else whether it may be NULL. */
  workspaceNullable: boolean | null;
}

interface UniqueKey {
  table: string;
  index: string;
  primary: boolean;
  columns: string[];
}

let database: ScratchDatabase;
let pool: pg.Pool;
let tables: Table[] = [];
let keys: UniqueKey[] = [];

before(async () => {
  database = await createTestDatabase();
  pool = createPool(database.url, 2);
  await migrate(pool);
  tables = (
    await pool.query<{ name: string; nullable: boolean | null }>(
      `SELECT c.relname AS name, CASE WHEN a.attnum IS NULL THEN NULL ELSE NOT a.attnotnull END AS nullable
       FROM pg_class c
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
       ORDER BY 1`,
    )
  ).rows.map((r) => ({ name: r.name, workspaceNullable: r.nullable }));
  keys = (
    await pool.query<{ table: string; index: string; primary: boolean; columns: string[] }>(
      `SELECT t.relname AS table, i.relname AS index, x.indisprimary AS primary,
              array(SELECT coalesce(a.attname::text, '(expression)')
                    FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(attnum, n)
                    LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                    ORDER BY k.n) AS columns
       FROM pg_index x
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_class i ON i.oid = x.indexrelid
       WHERE t.relnamespace = 'public'::regnamespace AND x.indisunique
       ORDER BY 1, 2`,
    )
  ).rows;
});

after(async () => {
  await pool?.end();
  await database?.drop();
});

/** The section of docs/operations.md on Citus: from its heading to the next heading of its level or above. */
async function citusSection(): Promise<string> {
  const doc = await readFile(path.join(PROJECT_ROOT, 'docs', 'operations.md'), 'utf8');
  const start = doc.indexOf('\n## The schema on Citus');
  assert.ok(start >= 0, 'docs/operations.md has a section "The schema on Citus"');
  const rest = doc.slice(start + 1);
  const end = rest.slice(1).search(/\n## /);
  return end < 0 ? rest : rest.slice(0, end + 1);
}

describe('the schema distributes by workspace_id (Citus)', () => {
  it('every table has a NOT NULL workspace_id, or is listed with what it would be instead', () => {
    const offenders = tables
      .filter((t) => t.workspaceNullable !== false && !(t.name in NOT_BY_WORKSPACE))
      .map((t) => `${t.name} (${t.workspaceNullable === null ? 'no workspace_id' : 'workspace_id may be NULL'})`);
    assert.deepEqual(offenders, [], 'add workspace_id NOT NULL, or list the table in NOT_BY_WORKSPACE and the doc');
  });

  it('every unique key of a table distributed by workspace_id contains workspace_id, or is listed', () => {
    const offenders = keys
      .filter((k) => !(k.table in NOT_BY_WORKSPACE) && !k.columns.includes('workspace_id'))
      .filter((k) => !(k.primary && k.columns.length === 1 && OWN_ID_KEYS[k.table] === k.columns[0]))
      .filter((k) => !(k.index in OTHER_KEYS))
      .map((k) => `${k.index} on ${k.table} (${k.columns.join(', ')})`);
    assert.deepEqual(offenders, [], 'put workspace_id in the key, or list it in OTHER_KEYS and the doc');
  });

  it('lists nothing the schema no longer has, and nothing that already follows the rule', () => {
    const byName = new Map(tables.map((t) => [t.name, t]));
    for (const name of Object.keys(NOT_BY_WORKSPACE)) assert.ok(byName.has(name), `table ${name} exists`);
    for (const [table, column] of Object.entries(OWN_ID_KEYS)) {
      const pk = keys.find((k) => k.table === table && k.primary);
      assert.deepEqual(pk?.columns, [column], `${table}'s primary key is (${column})`);
      assert.equal(byName.get(table)?.workspaceNullable, false, `${table} has workspace_id NOT NULL`);
    }
    for (const index of Object.keys(OTHER_KEYS)) {
      const key = keys.find((k) => k.index === index);
      assert.ok(key, `unique index ${index} exists`);
      assert.ok(!key.columns.includes('workspace_id'), `${index} lacks workspace_id`);
    }
  });

  it("the token check's tables are distributed by workspace_id together, and the doc says so", async () => {
    for (const name of READ_TOGETHER) {
      const table = tables.find((t) => t.name === name);
      assert.equal(table?.workspaceNullable, false, `${name} has workspace_id NOT NULL`);
      assert.ok(!(name in NOT_BY_WORKSPACE), `${name} is distributed by workspace_id`);
    }
    const configurationKey = keys.find((k) => k.table === 'workspace_configurations' && k.primary);
    assert.deepEqual(configurationKey?.columns, ['workspace_id'], 'one configuration per workspace');
    assert.match(await citusSection(), /`workspace_configurations`[^\n]*co-located with `credentials`/);
  });

  it('docs/operations.md lists the same exceptions', async () => {
    const section = await citusSection();
    const firstCells = [...section.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(
      [...firstCells].sort(),
      [...Object.keys(NOT_BY_WORKSPACE), ...Object.keys(OTHER_KEYS)].sort(),
      'the tables of the section: one row per table not distributed by workspace_id and per other key',
    );
    const ownId = /^\*\*Own-id primary keys\.\*\*[^\n]*(?:\n(?!\n)[^\n]*)*/m.exec(section)?.[0] ?? '';
    const tableNames = new Set(tables.map((t) => t.name));
    const named = new Set(
      [...ownId.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1] as string).filter((n) => tableNames.has(n)),
    );
    assert.deepEqual(
      [...named].sort(),
      Object.keys(OWN_ID_KEYS).sort(),
      'the "Own-id primary keys." paragraph names them',
    );
  });
});
