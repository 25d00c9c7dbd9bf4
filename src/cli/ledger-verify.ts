// `npm run ledger:verify`: checks the ledger's invariants on DATABASE_URL (or the embedded database) and
// exits 1 if any is broken, printing the rows that break it.
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/open.js';
import { INVARIANTS, verifyLedger } from '../modules/ledger/ledger.verify.js';

const config = loadConfig();
const database = await openDatabase(config, () => undefined);
try {
  const violations = await verifyLedger(database.pool);
  const broken = new Map(violations.map((v) => [v.invariant, v.rows]));
  for (const { name } of INVARIANTS) {
    const rows = broken.get(name);
    process.stdout.write(`${rows ? 'FAIL' : 'ok  '}  ${name}\n`);
    for (const row of rows ?? []) process.stdout.write(`      ${JSON.stringify(row)}\n`);
  }
  const { rows } = await database.pool.query<{ postings: string; lines: string }>(
    'SELECT (SELECT count(*) FROM ledger_postings) AS postings, (SELECT count(*) FROM ledger_lines) AS lines',
  );
  process.stdout.write(
    `${rows[0]?.postings ?? 0} postings, ${rows[0]?.lines ?? 0} lines; ${violations.length === 0 ? 'the ledger is sound' : `${violations.length} invariant(s) broken`}\n`,
  );
  if (violations.length > 0) process.exitCode = 1;
} catch (err) {
  process.stderr.write(`ledger verification failed to run: ${(err as Error).message}\n`);
  process.exitCode = 2;
} finally {
  await database.close();
}
