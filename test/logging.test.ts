// Logs to a file or a pipe are written asynchronously (src/platform/logging.ts): a log line never waits on the disk
// on the event loop, and none is lost when the process exits with lines still queued.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PROJECT_ROOT } from './helpers/start-command.js';

const LINES = 20_000;

test('a process that exits right after logging leaves every line, in order, though the writes had not caught up', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'payments-logging-'));
  try {
    const file = path.join(dir, 'out.log');
    // The child logs LINES lines through the service's log stream, notes how much of them had reached the file when
    // its loop ended, and exits at once (process.exit, as a fatal start error does).
    const script = `
      import { statSync } from 'node:fs';
      import pino from 'pino';
      import { logStream } from './src/platform/logging.ts';
      const stream = logStream();
      const log = pino({ level: 'info' }, stream);
      for (let i = 0; i < ${LINES}; i++) log.info({ n: i, padding: 'x'.repeat(150) }, 'line');
      process.stderr.write(JSON.stringify({ sync: stream.sync, written: statSync(${JSON.stringify(file)}).size }));
      process.exit(0);
    `;
    const out = openSync(file, 'w');
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', out, 'pipe'],
      encoding: 'utf8',
      timeout: 60_000,
    });
    closeSync(out);
    assert.equal(child.status, 0, child.stderr);
    const seen = JSON.parse(child.stderr) as { sync: boolean; written: number };
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    // The mechanism: the stream is asynchronous, and when the loop ended the file held less than was logged.
    assert.equal(seen.sync, false);
    const total = Buffer.byteLength(lines.join('\n')) + 1;
    assert.ok(seen.written < total, `${seen.written} of ${total} bytes were on disk when the loop ended`);
    // The behaviour: everything logged is there, in order, after the exit.
    assert.equal(lines.length, LINES);
    lines.forEach((line, i) => assert.equal((JSON.parse(line) as { n: number }).n, i));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
