// Logs to a file or a pipe are written asynchronously (src/platform/logging.ts): a log line never waits on the disk
// or the pipe on the event loop, and none is lost when the process exits with lines still queued, whether it exits
// at once (pino's flush at exit) or on purpose after `closeLogs`, behind a pipe that was full.
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
    const seen = JSON.parse(child.stderr.trim().split('\n').at(-1) ?? '') as { sync: boolean; written: number };
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

test('behind a full pipe, a process that stops on purpose waits for its lines (closeLogs) and leaves every one whole', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'payments-logging-'));
  try {
    const file = path.join(dir, 'out.log');
    const ready = path.join(dir, 'ready');
    // 500 lines (225 kB: more than a pipe holds), a pause, 500 more, then the stop main.ts makes: closeLogs, then
    // exit. The pipe's reader starts only 0.5 s after the child says it is stopping (the file READY), so the lines
    // cannot all be written before then. pino's own flush at exit writes what is queued but not a write already
    // under way: without closeLogs, lines go missing or out of order (some runs, not all).
    const script = `
      import { writeFileSync } from 'node:fs';
      import pino from 'pino';
      import { closeLogs, logStream } from './src/platform/logging.ts';
      const log = pino({ level: 'info' }, logStream());
      const burst = (from) => { for (let i = from; i < from + 500; i++) log.info({ n: i, padding: 'x'.repeat(400) }, 'line'); };
      burst(0);
      await new Promise((r) => setTimeout(r, 30));
      burst(500);
      const stopping = performance.now();
      writeFileSync(process.env.READY, '');
      await closeLogs();
      process.stderr.write(JSON.stringify({ waited_ms: performance.now() - stopping }) + '\\n');
      process.exit(0);
    `;
    const run = spawnSync(
      'sh',
      [
        '-c',
        `"$NODE" --import tsx --input-type=module -e "$SCRIPT" | ` +
          `(while [ ! -e "$READY" ]; do sleep 0.05; done; sleep 0.5; cat > "$OUT")`,
      ],
      {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, NODE: process.execPath, SCRIPT: script, OUT: file, READY: ready },
      },
    );
    assert.equal(run.status, 0, run.stderr);
    // The mechanism: closeLogs returned only once the reader had drained the pipe, 0.5 s after the stop began.
    const { waited_ms } = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { waited_ms: number };
    assert.ok(waited_ms >= 400, `closeLogs returned ${Math.round(waited_ms)} ms after the stop began`);
    // The behaviour: every line, whole and in order.
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 1000, run.stderr);
    lines.forEach((line, i) => assert.equal((JSON.parse(line) as { n: number }).n, i));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
