// Shared steps of the dashboard's browser tests: a fresh browser context, signing in by the form's label, and the
// checks every page passes (no serious or critical axe-core violation, no horizontal scroll at 360 px, screenshots
// at 360 and 1280 px).
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { axeViolations, DESKTOP, PHONE } from './browser.js';

/** Screenshots go to test-output/dashboard (git ignores it), or where DASHBOARD_SCREENSHOTS says (docs/dashboard). */
const SHOTS = path.resolve(process.env.DASHBOARD_SCREENSHOTS ?? path.join('test-output', 'dashboard'));

/**
 * A context at phone width whose page errors are collected. It bypasses the CSP only so that axe-core can be
 * injected; test/dashboard.browser.test.ts checks the CSP itself on a context that does not.
 */
export async function openContext(
  browser: Browser,
  _t: { baseUrl: string },
  options: { bypassCSP?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: PHONE, bypassCSP: options.bypassCSP ?? true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  return { context, page, errors };
}

/** Fills the sign-in page's token form, the break-glass path (the page must be showing it), and submits it. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in with the token' }).click();
  await page.waitForLoadState('load');
}

/** Fills the sign-in page's member form (email and password) and submits it. */
export async function signInAsMember(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForLoadState('load');
}

/**
 * The page as it is now: axe-core finds nothing serious or critical, nothing is wider than 360 px, and it is
 * photographed at both widths as `<name>-360.png` and `<name>-1280.png`. The page is left at phone width.
 */
export async function assertPageQuality(page: Page, name: string): Promise<void> {
  await page.setViewportSize(PHONE);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `${name}: the page scrolls sideways by ${overflow} px at 360 px`);
  const violations = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${name}: axe-core violations`,
  );
  await mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}-360.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: path.join(SHOTS, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize(PHONE);
}
