// What `npm start` runs, for the tests and the benchmark that start the service as a process of its own: the
// arguments after `node` in package.json's start script (its node flags and its script).
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..', '..');

/** `root`: another checkout of the project (the benchmark's `--compare`); this one by default. */
export function npmStartArgs(root = PROJECT_ROOT): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const [node, ...args] = pkg.scripts.start.trim().split(/\s+/);
  if (node !== 'node') throw new Error(`npm start is not a node command: ${pkg.scripts.start}`);
  // The script by its full path, so the command works from any working directory.
  return args.map((a) => (/\.(mjs|js|ts)$/.test(a) ? path.join(root, a) : a));
}
