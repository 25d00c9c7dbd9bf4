// The embedded server's log goes to files of its own, not through the service: a service that stops reading (its event
// loop held, a debugger, SIGSTOP) never stops the database. Here the test's own process is the service, held in
// spawnSync while another process makes the server log far more than a pipe holds, then checkpoint.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { privateServer, type PrivateServer } from './helpers/db-faults.js';
import { PROJECT_ROOT } from './helpers/start-command.js';

let server: PrivateServer;
const relayed: string[] = [];

before(async () => {
  server = await privateServer('log', (line) => relayed.push(line));
});

after(async () => {
  await server.stop();
});

test('the server logs 1 MB and checkpoints while the service reads none of its output; the lines are in its log files', async () => {
  const marker = `marker-${randomBytes(6).toString('hex')}`;
  // 1,000 lines of 1 kB: several times what a pipe (and a socket's buffer) holds.
  const script = `
    import pg from 'pg';
    const client = new pg.Client({ connectionString: ${JSON.stringify(server.url)} });
    await client.connect();
    for (let i = 0; i < 1000; i++)
      await client.query("DO $$ BEGIN RAISE LOG '%', repeat('x', 1000) || ' ${marker}'; END $$");
    await client.query('CHECKPOINT');
    await client.end();
    console.log('done');`;
  // spawnSync holds this process's event loop until the other process ends: nothing here reads the server's output.
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(run.stdout.trim(), 'done', `the logging process did not finish: ${run.error?.message ?? run.stderr}`);

  const logDir = path.join(server.clusterDir, 'log');
  const files = (await readdir(logDir)).filter((name) => /^postgresql-[A-Z][a-z]{2}\.log$/.test(name));
  assert.ok(files.length > 0, `no log file in ${logDir}`);
  const text = (await Promise.all(files.map((name) => readFile(path.join(logDir, name), 'utf8')))).join('');
  assert.equal(text.split(`${'x'.repeat(1000)} ${marker}`).length - 1, 1000); // the messages (their statements name the marker too)
  assert.match(text, /checkpoint starting/);
  assert.equal(relayed.filter((line) => line.includes(marker)).length, 0, 'no line came through the service');
});
