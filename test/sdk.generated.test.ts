// The SDK's types are generated from openapi.json (packages/sdk/src/generated/openapi.ts): this fails when they
// differ from what openapi-typescript makes of the committed document now (run `npm run sdk:generate`). Together
// with test/openapi.test.ts (the document matches the code) it keeps the client's types true to the service.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';

it('packages/sdk/src/generated/openapi.ts is what openapi-typescript makes of openapi.json', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sdk-types-'));
  try {
    const out = path.join(dir, 'openapi.ts');
    const run = spawnSync(
      process.execPath,
      [path.resolve('node_modules/openapi-typescript/bin/cli.js'), 'openapi.json', '-o', out],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.ok(
      readFileSync('packages/sdk/src/generated/openapi.ts', 'utf8') === readFileSync(out, 'utf8'),
      'the SDK types are stale: run `npm run sdk:generate` and commit the result',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
