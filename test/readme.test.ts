// The README's tour works as written: its first ```sh block under "## Tour", pasted as one block into bash
// against a freshly started service, takes a payment, replays it, waits for success, refunds it and lists.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FAST_LIFECYCLE, startTestApp, type TestApp } from './helpers/harness.js';

const README = path.resolve(import.meta.dirname, '..', 'README.md');
const TOUR_HEADING = '## Tour';

/** The first ```sh block after the tour's heading, before the next section begins. */
function tourBlock(readme: string): string {
  const lines = readme.split('\n');
  const start = lines.findIndex((line) => line.trim() === TOUR_HEADING);
  assert.ok(start >= 0, `README.md has no "${TOUR_HEADING}" heading`);
  const section = lines.slice(start + 1);
  const open = section.findIndex((line) => line.trim() === '```sh' || /^#{1,2} /.test(line));
  assert.ok(open >= 0 && section[open]?.trim() === '```sh', `no \`\`\`sh block under "${TOUR_HEADING}"`);
  const close = section.findIndex((line, i) => i > open && line.trim() === '```');
  assert.ok(close > open, 'the tour block is not closed');
  return section.slice(open + 1, close).join('\n');
}

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script in bash. Asynchronously: the service under test answers from this same process, so a
 * synchronous child (spawnSync) would block the event loop and the service with it.
 */
function bash(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd,
      env,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

describe('README tour', () => {
  let t: TestApp;
  let dir: string;
  before(async () => {
    t = await startTestApp(FAST_LIFECYCLE, { workers: true });
    // The tour reads the token from ./data/credentials.json, as the first `npm start` writes it (src/bootstrap.ts).
    dir = await mkdtemp(path.join(os.tmpdir(), 'readme-tour-'));
    await mkdir(path.join(dir, 'data'));
    const credentials = {
      base_url: t.baseUrl,
      environment: 'sandbox',
      workspaces: [{ id: t.demoWorkspaceId, name: 'demo', integrator: { audience: 'integrator', token: t.demoToken } }],
    };
    await writeFile(path.join(dir, 'data', 'credentials.json'), `${JSON.stringify(credentials, null, 2)}\n`, {
      mode: 0o600,
    });
  });
  after(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pasted into bash against a fresh service, takes a payment, replays it, refunds it and lists', async () => {
    const block = tourBlock(await readFile(README, 'utf8'));
    const run = await bash(block, dir, { ...process.env, BASE: t.baseUrl }, 60_000);
    const output = `--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
    assert.equal(run.signal, null, `the tour was stopped by ${run.signal} (timed out?)\n${output}`);
    assert.equal(run.status, 0, `the tour exited with ${run.status}\n${output}`);

    const created = /"collection_id":"([0-9a-f-]{36})"/.exec(run.stdout);
    assert.ok(created, `the tour printed no created collection\n${output}`);
    const id = created[1] as string;
    assert.match(
      run.stdout,
      /^idempotent-replayed: true\r?$/im,
      `the replay did not say Idempotent-Replayed: true\n${output}`,
    );
    assert.match(
      run.stdout,
      new RegExp(`^collection ${id}: successful$`, 'm'),
      `the collection did not reach successful\n${output}`,
    );
    assert.match(run.stdout, /^refund [0-9a-f-]{36}: successful$/m, `the refund did not reach successful\n${output}`);
    // The list at the end shows the collection, now refunded.
    const list = run.stdout.slice(run.stdout.lastIndexOf('{"data":'));
    const page = JSON.parse(list) as { data: { collection_id: string; status: string }[] };
    assert.equal(
      page.data.find((c) => c.collection_id === id)?.status,
      'refunded',
      `the list does not show ${id} refunded\n${output}`,
    );
  });
});
