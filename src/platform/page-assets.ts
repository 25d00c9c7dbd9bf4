// A served page's own script and styles: a browser TypeScript file and a CSS file bundled and minified by esbuild
// once, when the page's module loads, inlined into the page and pinned by hash in its Content-Security-Policy.
import { buildSync } from 'esbuild';
import { createHash } from 'node:crypto';

export interface PageAssets {
  script: string;
  style: string;
}

/** Bundles `scriptFile` and `cssFile` (absolute paths) for `target` browsers. */
export function bundlePageAssets(scriptFile: string, cssFile: string, target: string): PageAssets {
  const { outputFiles } = buildSync({
    entryPoints: [scriptFile, cssFile],
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target,
    outdir: 'out',
    write: false,
    logLevel: 'silent',
  });
  const output = (ext: string): string => {
    const file = outputFiles.find((f) => f.path.endsWith(ext));
    if (!file) throw new Error(`esbuild wrote no ${ext} for ${scriptFile}`);
    return file.text.trim();
  };
  return { script: output('.js'), style: output('.css') };
}

/** The CSP source that admits exactly this inline script or style. */
export const cspHash = (s: string): string => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
