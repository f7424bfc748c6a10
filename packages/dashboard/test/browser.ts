import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Screenshots of every page land here (git-ignored). */
/**
 * Each browser scenario's own time limit. A limit on the whole file would be
 * a sum of scenarios that grows with every one added and trips on a busy
 * machine; a limit per scenario still stops a hung page.
 */
export const SCENARIO = { timeout: 90_000 };
export const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Debian's chromium as root in a container: no sandbox, no GPU, small /dev/shm,
// and none of the background traffic a desktop browser makes.
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** One headless browser for the whole file; each scenario gets its own context. */
export async function launchBrowser(): Promise<Browser> {
  try {
    return await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  } catch (err) {
    throw new Error(`cannot start ${CHROMIUM} (install it: apt-get install -y chromium, or set CHROMIUM_PATH): ${(err as Error).message}`, { cause: err });
  }
}

export interface DashboardPage {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions seen so far. */
  errors: string[];
  /** Fails unless every collected error matches one of `allowed`. */
  assertNoConsoleErrors(allowed?: RegExp[]): void;
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

/** A fresh browser context on the server's dashboard that records console errors. */
export async function openDashboard(browser: Browser, baseURL: string, viewport = { width: 1280, height: 860 }): Promise<DashboardPage> {
  const context = await browser.newContext({ baseURL, viewport, colorScheme: 'light', reducedMotion: 'reduce' });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  mkdirSync(ARTIFACTS, { recursive: true });
  return {
    context,
    page,
    errors,
    assertNoConsoleErrors(allowed = []) {
      const unexpected = errors.filter((e) => !allowed.some((pattern) => pattern.test(e)));
      assert.deepEqual(unexpected, [], `console errors:\n${unexpected.join('\n')}`);
    },
    async screenshot(name) {
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
    },
  };
}

/** Signs in through the form and waits for the app shell. */
export async function signIn(page: Page, apiKey: string): Promise<void> {
  await page.goto('/');
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Waits until the live event stream is connected, so "without reloading" is the stream's doing. */
export async function waitForLive(page: Page): Promise<void> {
  try {
    await page.locator('[data-testid="live-status"][data-status="live"]').waitFor();
  } catch (err) {
    const status = await page.locator('[data-testid="live-status"]').getAttribute('data-status').catch(() => null);
    throw new Error(`the live event stream never showed as connected (status: ${status ?? 'no indicator'})`, { cause: err });
  }
}
