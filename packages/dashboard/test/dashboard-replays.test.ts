/**
 * Paced DLQ replays on the dead letters page, in chromium against a real server: "Replay all
 * (paced)" starts one at the chosen pace, its progress bar fills to 100 % without a reload, and a
 * running replay can be cancelled from the list.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadDeadLetters } from '../../../test-support/job-fixtures.js';
import { SCENARIO, launchBrowser, openDashboard, signIn, type DashboardPage } from './browser.js';

let server: TestServer;
let browser: Browser;
const open: DashboardPage[] = [];

before(async () => {
  [server, browser] = await Promise.all([startTestServer('dashboard_replays'), launchBrowser()]);
});
after(async () => {
  await Promise.all(open.map((d) => d.close().catch(() => {})));
  await browser?.close();
  await server?.close();
});

async function signedIn(path: string): Promise<DashboardPage> {
  const d = await openDashboard(browser, server.url);
  open.push(d);
  await signIn(d.page, server.apiKey);
  await d.page.goto(path);
  return d;
}

describe('paced DLQ replays in the dashboard', () => {
  it('"Replay all (paced)" replays the queue at the chosen pace, and its progress bar reaches 100 %', SCENARIO, async () => {
    await loadDeadLetters(server.spool.db, server.organizationId, 'paced-q', 150);
    const d = await signedIn('/dead-letters?queue=paced-q');
    const page = d.page;
    await page.locator('.dlq-table tbody tr').first().waitFor();

    await page.getByRole('button', { name: 'Replay all (paced)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay all at a pace' });
    await dialog.waitFor();
    const perSecond = dialog.getByLabel('Jobs per second');
    await perSecond.fill('0');
    await dialog.getByRole('alert').filter({ hasText: 'whole number from 1 to' }).waitFor();
    assert.equal(await dialog.getByRole('button', { name: 'Start replay' }).isDisabled(), true);
    await perSecond.fill('100');
    await dialog.getByRole('button', { name: 'Start replay' }).click();
    await dialog.waitFor({ state: 'detached' });

    const row = page.locator('.replay-table tbody tr').first();
    await row.waitFor();
    assert.match(await row.textContent() ?? '', /paced-q/);
    assert.match(await row.textContent() ?? '', /100\/s/);
    const bar = row.getByRole('progressbar');
    // Mid-way: some progress shown before the end (150 jobs at 100/s take 1.5 s; the list is read every second).
    await page.waitForFunction(() => {
      const value = Number(document.querySelector('.replay-table tbody tr [role="progressbar"]')?.getAttribute('aria-valuenow'));
      return value > 0;
    });
    await row.and(page.locator('[data-status="completed"]')).waitFor({ timeout: 10_000 });
    assert.equal(await bar.getAttribute('aria-valuenow'), '100');
    assert.match(await row.getByTestId('replay-counts').textContent() ?? '', /100% · 150 \/ 150/);
    await d.screenshot('dlq-replay-completed');

    const replays = await server.request('GET', '/api/v1/jobs/dlq/replays');
    assert.equal(replays.body[0].status, 'completed');
    assert.equal(replays.body[0].per_second, 100);
    assert.equal(replays.body[0].done, 150);
    // The dead letters are gone from the list too.
    await page.getByText('No dead letters').waitFor();
    d.assertNoConsoleErrors();
  });

  it('a running replay is cancelled from the list; the job timeline names the replay', SCENARIO, async () => {
    const ids = await loadDeadLetters(server.spool.db, server.organizationId, 'slow-q', 40);
    const started = await server.request('POST', '/api/v1/jobs/dlq/replays', { body: { queue_name: 'slow-q', per_second: 2 } });
    assert.equal(started.status, 202);
    const d = await signedIn('/dead-letters?queue=slow-q');
    const row = d.page.locator(`.replay-table tbody tr[data-replay-id="${started.body.id}"]`);
    await row.and(d.page.locator('[data-status="running"]')).waitFor();
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.and(d.page.locator('[data-status="cancelled"]')).waitFor();
    assert.equal(await row.getByRole('button', { name: 'Cancel' }).count(), 0);
    const replay = (await server.request('GET', `/api/v1/jobs/dlq/replays/${started.body.id}`)).body;
    assert.equal(replay.status, 'cancelled');
    assert.ok(replay.remaining > 0);

    await d.page.goto(`/jobs/${ids[0]}`);
    await d.page.getByTestId('timeline-replay').filter({ hasText: started.body.id.slice(-8) }).waitFor();
    d.assertNoConsoleErrors();
  });
});
