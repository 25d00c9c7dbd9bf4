// `npm start`: bundles our TypeScript (src/; dependencies stay in node_modules) with esbuild and runs the bundle in
// this process. Running through tsx instead keeps its module loader alive beside the service, an extra V8 isolate
// in a thread of its own: about 37 MB of resident memory for nothing.
//
// Each process writes its own .build/main-<pid>.mjs (two starts at once never read each other's half-written
// file) and removes it when it exits; a file left by a process that died without exiting is removed by the next
// start. esbuild's own service process is stopped once the bundle is written. Where the checkout is read-only,
// run `node --import tsx src/main.ts` instead.
import { build, stop } from 'esbuild';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const dir = path.join(root, '.build');
const outfile = path.join(dir, `main-${process.pid}.mjs`);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};

try {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) {
    const pid = Number(/^main-(\d+)\.mjs(\.map)?$/.exec(name)?.[1]);
    if (pid && pid !== process.pid && !alive(pid)) rmSync(path.join(dir, name), { force: true });
  }
  await build({
    entryPoints: [path.join(root, 'src', 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    outfile,
    logLevel: 'warning',
  });
} catch (err) {
  process.stderr.write(
    `payments service failed to start: cannot bundle src/ into ${dir} (${err.message}); on a read-only checkout run: node --import tsx src/main.ts\n`,
  );
  process.exit(1);
} finally {
  await stop();
}
process.on('exit', () => {
  rmSync(outfile, { force: true });
  rmSync(`${outfile}.map`, { force: true });
});
await import(pathToFileURL(outfile).href);
