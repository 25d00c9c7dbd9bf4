/// <reference lib="dom" />
// A real Chromium for page tests: Debian's `chromium` driven by playwright-core (never a downloaded browser).
// Without the browser the page tests are skipped with the reason, unless REQUIRE_BROWSER=1 (CI sets it), when
// a missing browser fails them.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags for a machine with no network beyond loopback: no background calls home, no sandbox as root. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `no Chromium at ${CHROMIUM_PATH} (install it with \`apt-get install -y chromium\`, or set CHROMIUM_PATH)`;
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${reason}`);
  return reason;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS });
}

export const PHONE = { width: 360, height: 740 };
export const DESKTOP = { width: 1280, height: 800 };

/** Screenshots go here (git ignores it), one folder per suite. */
export async function screenshotDir(suite: string): Promise<string> {
  const dir = path.resolve('test-output', suite);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The current screen at phone and desktop width (PNG files `<name>-360.png`, `<name>-1280.png`); the page is left at phone width. */
export async function snapBothWidths(page: Page, dir: string, name: string): Promise<void> {
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: path.join(dir, `${name}-360.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: path.join(dir, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize(PHONE);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

const axeSource = (): string => {
  const require = createRequire(import.meta.url);
  return (require('axe-core') as { source: string }).source;
};

/**
 * WCAG 2.x A and AA checks (labels, names, contrast, landmarks…) by axe-core on the page as it is now. Needs a context
 * made with `bypassCSP: true`: the page's own CSP would, rightly, refuse the injected audit script.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource());
  return page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run: (ctx: Document, opts: unknown) => Promise<{ violations: AxeViolation[] }> } }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
}
