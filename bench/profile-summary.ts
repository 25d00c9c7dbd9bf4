// Where the service's CPU went, from the profiles `npm run bench -- --profile` writes (bench/profiles/<database>/):
// self time summed by package (or by this project's folder), and the functions with the most self time.
//
//   node --import tsx bench/profile-summary.ts bench/profiles/postgresql        every *.cpuprofile in the folder
//   node --import tsx bench/profile-summary.ts bench/profiles/postgresql 25     the top 25 functions (default 15)
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { functionLabel, owner, readProfile } from './lib/profiles.js';

function summarise(file: string, into: { byOwner: Map<string, number>; byFunction: Map<string, number> }): number {
  const profile = readProfile(file);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const micros = profile.timeDeltas[i] ?? 0;
    if (!node) return;
    total += micros;
    const who = owner(node.callFrame.url, node.callFrame.functionName);
    into.byOwner.set(who, (into.byOwner.get(who) ?? 0) + micros);
    const fn = functionLabel(node);
    into.byFunction.set(fn, (into.byFunction.get(fn) ?? 0) + micros);
  });
  return total;
}

const [target = 'bench/profiles', topArg = '15'] = process.argv.slice(2);
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(target, f))
  : [target];
if (files.length === 0) throw new Error(`no .cpuprofile in ${target}`);
const sums = { byOwner: new Map<string, number>(), byFunction: new Map<string, number>() };
let total = 0;
for (const f of files) total += summarise(f, sums);
const share = (micros: number): string => `${((100 * micros) / total).toFixed(1)} %`;
const top = (m: Map<string, number>, n: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);

process.stdout.write(`${files.length} profile(s), ${(total / 1e6).toFixed(1)} s sampled\n\nSelf time by owner:\n`);
for (const [who, micros] of top(sums.byOwner, 20)) process.stdout.write(`  ${share(micros).padStart(7)}  ${who}\n`);
process.stdout.write(`\nFunctions with the most self time:\n`);
for (const [fn, micros] of top(sums.byFunction, Number(topArg)))
  process.stdout.write(`  ${share(micros).padStart(7)}  ${fn}\n`);
