// `npm run reconcile -- --connector NAME --statement FILE.csv [--format mpesa|generic] [--columns …] [--success …]`:
// compares an operator's statement export with our records of that connector (on DATABASE_URL, or the embedded
// database) and prints the matched rows, the rows only one side has, and the amount or status mismatches. Exits 0
// when everything matches, 1 when anything does not, 2 on bad arguments or an unreadable statement.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/open.js';
import { loadCatalogue, MarketCatalogue } from '../modules/catalogue/catalogue.js';
import { exponentOf } from '../modules/providers/connector-config.js';
import {
  DEFAULT_SUCCESS,
  formatReconciliation,
  hasDifferences,
  parseColumnMap,
  parseGenericStatement,
  parseMpesaStatement,
  periodOf,
  reconcile,
  StatementError,
  type StatementRow,
} from '../modules/reports/reconcile.js';
import { movementsBetween, providerKnown, recordsNamed } from '../modules/reports/reports.repository.js';

const USAGE = `Usage:
  npm run reconcile -- --connector NAME --statement FILE.csv                      # an M-Pesa organisation statement
  npm run reconcile -- --connector NAME --statement FILE.csv --format generic \\
      --columns reference=Ref,amount=Amount,status=Status,time=Date[,direction=Type] [--success Completed,OK]

Compares the statement with our collections, refunds and payouts of that connector, by receipt or reference.
Exit 0: all matched; 1: differences (listed); 2: bad arguments or statement.
`;

function fail(message: string): never {
  process.stderr.write(`reconcile: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  values = parseArgs({
    options: {
      connector: { type: 'string' },
      statement: { type: 'string' },
      format: { type: 'string', default: 'mpesa' },
      columns: { type: 'string' },
      success: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  }).values;
} catch (err) {
  fail((err as Error).message);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!values.connector) fail('--connector NAME is needed (the connector name in PROVIDERS_FILE)');
if (!values.statement) fail('--statement FILE.csv is needed');
if (values.format !== 'mpesa' && values.format !== 'generic')
  fail(`--format must be mpesa or generic, not '${values.format}'`);
if (values.format === 'generic' && !values.columns) fail('--format generic needs --columns');

let rows: StatementRow[];
try {
  const text = readFileSync(values.statement, 'utf8');
  rows =
    values.format === 'mpesa'
      ? parseMpesaStatement(text)
      : parseGenericStatement(
          text,
          parseColumnMap(values.columns ?? ''),
          values.success ? values.success.split(',') : DEFAULT_SUCCESS,
        );
} catch (err) {
  if (
    err instanceof StatementError ||
    (err as NodeJS.ErrnoException).code === 'ENOENT' ||
    (err as { code?: string }).code?.startsWith('CSV_')
  )
    fail(`${values.statement}: ${(err as Error).message}`);
  throw err;
}
const period = periodOf(rows);
if (!period) fail(`${values.statement}: no transaction rows`);

const config = loadConfig();
const catalogue = new MarketCatalogue(loadCatalogue(config.catalogueFile));
const database = await openDatabase(config, () => undefined);
try {
  if (!(await providerKnown(database.pool, values.connector))) {
    process.stderr.write(`reconcile: no collection, refund or payout in this database runs on '${values.connector}'\n`);
    process.exitCode = 2;
  } else {
    const named = await recordsNamed(
      database.pool,
      values.connector,
      rows.map((r) => r.reference),
    );
    const inPeriod = await movementsBetween(database.pool, values.connector, period.from, period.to);
    const result = reconcile(rows, named, inPeriod, (currency) => exponentOf(catalogue, currency));
    const title = `${values.connector} against ${values.statement}: ${rows.length} rows, ${period.from.toISOString()} to ${period.to.toISOString()}`;
    process.stdout.write(formatReconciliation(result, title));
    if (hasDifferences(result)) process.exitCode = 1;
  }
} finally {
  await database.close();
}
