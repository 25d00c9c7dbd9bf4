// The coalescer (src/db/coalescer.ts): reads asked for while one is in flight go together in the next; a lone read goes
// at once; a caller never gets a read that began before it asked; a failed read fails its callers only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Coalescer } from '../src/db/coalescer.js';

/** A read whose answer the test releases: records the keys of each read, and finds each key as `found:<key>`. */
function controlledReads() {
  const reads: { keys: string[]; finish: (err?: Error) => void }[] = [];
  const readMany = (keys: string[]) =>
    new Promise<Map<string, string>>((resolve, reject) => {
      reads.push({
        keys,
        finish: (err) =>
          err ? reject(err) : resolve(new Map(keys.filter((k) => k !== 'missing').map((k) => [k, `found:${k}`]))),
      });
    });
  return { reads, readMany };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('a lone read goes at once; the keys asked for while it is in flight wait for it, then are read together', async () => {
  const { reads, readMany } = controlledReads();
  const c = new Coalescer(readMany);
  const first = c.get('a');
  await tick();
  assert.deepEqual(
    reads.map((r) => r.keys),
    [['a']],
  );
  const later = [c.get('b'), c.get('c'), c.get('b'), c.get('missing'), c.get('a')];
  await tick();
  assert.equal(reads.length, 1, 'nothing more is read while the first read is in flight');
  reads[0]?.finish();
  assert.equal(await first, 'found:a');
  await tick();
  // One read for all that waited, each key once; 'a' again, since the read in flight began before it was asked for.
  assert.deepEqual(reads[1]?.keys, ['b', 'c', 'missing', 'a']);
  reads[1]?.finish();
  assert.deepEqual(await Promise.all(later), ['found:b', 'found:c', 'found:b', undefined, 'found:a']);
  assert.deepEqual(c.stats, { reads: 2, keys: 5 });
});

test('a read that fails fails its own callers; the next read goes on', async () => {
  const { reads, readMany } = controlledReads();
  const c = new Coalescer(readMany);
  const first = c.get('a');
  await tick();
  const second = c.get('b');
  reads[0]?.finish(new Error('connection lost'));
  await assert.rejects(first, /connection lost/);
  await tick();
  assert.deepEqual(reads[1]?.keys, ['b']);
  reads[1]?.finish();
  assert.equal(await second, 'found:b');
});

test('at most maxKeys in one read; the rest in the next', async () => {
  const { reads, readMany } = controlledReads();
  const c = new Coalescer(readMany, 2);
  const first = c.get('x');
  await tick();
  const rest = ['a', 'b', 'c'].map((k) => c.get(k));
  reads[0]?.finish();
  await first;
  await tick();
  assert.deepEqual(reads[1]?.keys, ['a', 'b']);
  reads[1]?.finish();
  await tick();
  await tick();
  assert.deepEqual(reads[2]?.keys, ['c']);
  reads[2]?.finish();
  assert.deepEqual(await Promise.all(rest), ['found:a', 'found:b', 'found:c']);
});

test('a read whose answer cannot be read fails its callers, and the next read goes on', async () => {
  let calls = 0;
  const c = new Coalescer<string, string>(async (keys) => {
    calls += 1;
    return (calls === 1 ? {} : new Map(keys.map((k) => [k, `found:${k}`]))) as Map<string, string>;
  });
  await assert.rejects(c.get('a'), TypeError);
  assert.equal(await c.get('b'), 'found:b');
});
