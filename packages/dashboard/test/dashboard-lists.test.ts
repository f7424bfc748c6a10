/**
 * The dashboard's lists and charts, end to end in chromium against a real server: the Overview's
 * chart axes, the dead letters' error column, the jobs list's counts, payload preview and bulk
 * actions, workers by hostname, and row actions on a phone-sized screen; and the activity
 * history the server keeps, charted on the Overview and on a queue's page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { SCENARIO, launchBrowser, openDashboard, signIn, waitForLive, type DashboardPage } from './browser.js';

let server: TestServer;
let browser: Browser;
const open: DashboardPage[] = [];

before(async () => {
  [server, browser] = await Promise.all([startTestServer('dashboard_lists'), launchBrowser()]);
});
after(async () => {
  await Promise.all(open.map((d) => d.close().catch(() => {})));
  await browser?.close();
  await server?.close();
});

const api = async (method: string, path: string, body?: unknown) => {
  const res = await server.request(method, `/api/v1${path}`, { body });
  assert.ok(res.status < 300, `${method} ${path} → ${res.status} ${res.text}`);
  return res.body;
};

async function signedIn(path: string, viewport?: { width: number; height: number }): Promise<DashboardPage> {
  const d = await openDashboard(browser, server.url, viewport);
  open.push(d);
  await signIn(d.page, server.apiKey);
  await d.page.goto(path);
  return d;
}

/** A dead letter on `queue` with `error`, as a worker makes one. */
async function deadLetter(queue: string, error: string): Promise<string> {
  const { id } = await api('POST', '/jobs', { queue_name: queue, payload: { for: queue }, max_retries: 0 });
  const [claimed] = (await api('POST', '/jobs/claim', { queue_name: queue, worker_id: `w-${queue}` })).jobs;
  await api('POST', `/jobs/${id}/fail`, { worker_id: `w-${queue}`, lease_id: claimed.lease_id, error });
  return id;
}

describe('dashboard lists', () => {
  it('Overview: the oldest-pending axis is wide enough for "1 min 20 s", and one sample spans minutes, not years', SCENARIO, async () => {
    const { id } = await api('POST', '/jobs', { queue_name: 'old-q', payload: {} });
    // A job that has waited 100 s, without the test waiting 100 s. Which step uPlot picks depends on
    // the chart's height: 15 s or 30 s steps give a "1 min N s" label (the widest kind), 1 min steps
    // "1 min"; either way every label drawn must fit the axis.
    await server.database.pool.query(`UPDATE spool.jobs SET created_at = now() - interval '100 seconds' WHERE id = $1`, [id]);

    const d = await signedIn('/');
    const oldest = d.page.locator('figure.chart', { hasText: 'Oldest pending job' }).locator('.chart-canvas');
    await oldest.and(d.page.locator('[data-x-span]')).waitFor();
    const span = Number(await oldest.getAttribute('data-x-span'));
    assert.ok(span > 0 && span <= 3600, `with fewer than two samples the time axis spans ${span} s`);

    await d.page.waitForFunction(() => {
      const el = [...document.querySelectorAll('figure.chart')].find((f) => f.textContent?.includes('Oldest pending job'))?.querySelector<HTMLElement>('.chart-canvas');
      return el?.dataset.yLabels?.includes('min') ?? false;
    });
    const labels = (await oldest.getAttribute('data-y-labels'))!.split('|');
    assert.ok(labels.some((l) => /^1 min( \d+ s)?$/.test(l)), labels.join(', '));
    const labelWidth = Number(await oldest.getAttribute('data-y-label-width'));
    const axis = Number(await oldest.getAttribute('data-y-axis-size'));
    assert.ok(labelWidth + 15 <= axis, `labels ${labelWidth}px wide fit the ${axis}px axis with its ticks`);
    d.assertNoConsoleErrors();
  });

  it("the Overview and a queue's page chart the server's history: last hour, day and week, no years, kept current", SCENARIO, async () => {
    const queue = 'hist-q';
    await api('POST', '/jobs/bulk', { queue_name: queue, default_max_retries: 0, jobs: Array.from({ length: 7 }, (_, i) => ({ payload: { i } })) });
    const { jobs } = await api('POST', '/jobs/claim', { queue_name: queue, worker_id: 'hist-worker', limit: 6 });
    for (const [i, job] of (jobs as { id: string; lease_id: string }[]).entries()) {
      if (i === 5) continue; // still running: completed later, while the page is open
      await api('POST', `/jobs/${job.id}/${i === 4 ? 'fail' : 'complete'}`, { worker_id: 'hist-worker', lease_id: job.lease_id, ...(i === 4 ? { error: 'no' } : {}) });
    }
    await server.rollUp();

    const d = await signedIn('/');
    const { page } = d;
    const activity = page.locator('section.activity');
    const chart = (title: string) => page.locator('figure.chart', { hasText: title }).locator('.chart-canvas');
    const axis = async (title: string) => {
      const canvas = chart(title);
      await canvas.and(page.locator('[data-x-labels]')).waitFor();
      return { span: Number(await canvas.getAttribute('data-x-span')), labels: (await canvas.getAttribute('data-x-labels'))!.split('|') };
    };
    const noYears = (labels: string[]) => assert.ok(labels.length > 1 && labels.every((l) => !/\d{4}/.test(l)), labels.join(', '));
    await page.locator('section.activity[data-loaded="true"]').waitFor();
    assert.ok(Number(await activity.getAttribute("data-completed")) >= 4, `completed: ${await activity.getAttribute("data-completed")} ${await activity.evaluate((e) => e.outerHTML.slice(0, 300))}`);
    const hour = await axis('Jobs per minute');
    assert.ok(hour.span >= 3600 && hour.span <= 3660, `the last hour spans ${hour.span} s`);
    noYears(hour.labels);
    assert.ok(hour.labels.every((l) => /^\d{1,2}:\d{2}( [AP]M)?$/.test(l)), `times of day: ${hour.labels.join(', ')}`);
    for (const title of ['Wait before start', 'Run time', 'Queue depth', 'Oldest pending job']) await chart(title).waitFor();
    const yLabels = async (title: string) => {
      await chart(title).and(page.locator('[data-y-labels]')).waitFor();
      return (await chart(title).getAttribute('data-y-labels'))!.split('|');
    };
    const counts = await yLabels('Jobs per minute');
    assert.ok(counts.every((l) => /^\d{1,3}(,\d{3})*$/.test(l)), `whole counts: ${counts.join(', ')}`);
    const durations = await yLabels('Run time');
    assert.ok(durations.every((l) => /^[\d.]+ (ms|s|min|h)( \d+ (s|min))?$/.test(l)), `durations in plain units: ${durations.join(', ')}`);
    await d.screenshot('overview-history');

    const ranges = page.getByRole('group', { name: 'Time range' });
    await ranges.getByRole('button', { name: 'Last 7 days' }).click();
    await page.locator('section.activity[data-range="week"][data-loaded="true"]').waitFor();
    await page.waitForFunction(() => Number(document.querySelector<HTMLElement>('figure.chart .chart-canvas')?.dataset.xSpan) > 86_400);
    const week = await axis('Jobs per hour');
    assert.ok(week.span >= 7 * 86_400 && week.span <= 7 * 86_400 + 3600, `the last week spans ${week.span} s`);
    noYears(week.labels);
    assert.ok(week.labels.every((l) => !l.includes(':') && /[A-Za-z]{3}/.test(l) && /\d/.test(l)), `weekday and date, no times: ${week.labels.join(', ')}`);
    await ranges.getByRole('button', { name: 'Last 24 h' }).click();
    await page.locator('section.activity[data-range="day"][data-loaded="true"]').waitFor();
    await page.waitForFunction(() => {
      const span = Number(document.querySelector<HTMLElement>('figure.chart .chart-canvas')?.dataset.xSpan);
      return span >= 86_400 && span <= 86_460;
    });
    const day = (await axis('Jobs per minute')).labels;
    noYears(day);
    // How many ticks fit depends on the labels' width (locale) and the time of day (12 h steps give
    // two or three in a day), but one label names the day: the midnight tick's date, or, when that
    // midnight sits at the cut-off right edge (the hour after it), the first tick's weekday and time.
    const named = day.filter((l) => /[A-Za-z]{3}/.test(l));
    const midnight = named.length === 1 && !named[0]!.includes(':');
    const first = named.length === 1 && named[0] === day[0] && day[0]!.includes(':');
    assert.ok((midnight || first) && day.length >= 2, `times of day, the day named once: ${day.join(', ')}`);
    await ranges.getByRole('button', { name: 'Last hour' }).click();

    // The queue's own page, from the Queues list; it follows a completion without a reload.
    await page.goto('/queues');
    await page.locator(`tr[data-queue="${queue}"]`).getByRole('link', { name: queue }).click();
    await page.getByRole('heading', { level: 1, name: queue }).waitFor();
    await page.locator('.tile', { hasText: 'Completed 24 h' }).locator('.tile-value', { hasText: '4' }).waitFor();
    await page.locator('section.activity[data-loaded="true"][data-completed="4"][data-enqueued="7"]').waitFor();
    await waitForLive(page);
    const running = (jobs as { id: string; lease_id: string }[])[5]!;
    await api('POST', `/jobs/${running.id}/complete`, { worker_id: 'hist-worker', lease_id: running.lease_id });
    await page.locator('section.activity[data-completed="5"]').waitFor();
    await page.locator('.tile', { hasText: 'Completed 24 h' }).locator('.tile-value', { hasText: '5' }).waitFor();
    await d.screenshot('queue-detail');
    d.assertNoConsoleErrors();
  });

  it('dead letters show their error; on a phone the row actions are on screen', SCENARIO, async () => {
    const id = await deadLetter('err-q', 'SMTP 554: mailbox unavailable');
    const d = await signedIn('/dead-letters?queue=err-q');
    const row = d.page.locator(`tr[data-job-id="${id}"]`);
    await row.locator('td.error-cell', { hasText: 'SMTP 554: mailbox unavailable' }).waitFor();
    assert.equal(await d.page.locator('.dlq-table th', { hasText: 'Error' }).count(), 1);
    d.assertNoConsoleErrors();

    const phone = await signedIn('/dead-letters?queue=err-q', { width: 390, height: 844 });
    const replay = phone.page.locator(`tr[data-job-id="${id}"]`).getByRole('button', { name: 'Replay' });
    await replay.waitFor();
    const box = (await replay.boundingBox())!;
    assert.ok(box.x >= 0 && box.x + box.width <= 390, `Replay is at ${box.x}..${box.x + box.width} on a 390 px screen`);
    await phone.screenshot('narrow-dead-letters');
    await replay.click();
    await phone.page.getByRole('dialog', { name: 'Replay dead letters?' }).waitFor();
    phone.assertNoConsoleErrors();
  });

  it('jobs list: counts by status, a payload preview, and retry / cancel of the selected jobs', SCENARIO, async () => {
    const failed = await deadLetter('bulk-q', 'boom');
    const second = await deadLetter('bulk-q', 'boom again');
    const { id: waiting } = await api('POST', '/jobs', { queue_name: 'bulk-q', payload: { greeting: 'hello preview' } });
    const stats = await api('GET', '/jobs/stats');

    const d = await signedIn('/jobs?queue=bulk-q');
    const { page } = d;
    const counts = page.getByRole('list', { name: 'Jobs by status' });
    await counts.locator('[data-status="deadletter"]', { hasText: String(stats.deadletter) }).waitFor();
    assert.match(await counts.locator('[data-status="pending"]').innerText(), new RegExp(`pending\\s+${stats.pending}`));

    await page.locator(`tr[data-job-id="${waiting}"]`).getByRole('button', { name: 'Payload' }).click();
    await page.locator('.inspect-row').getByText('hello preview').waitFor();

    // Select everything: retry applies to the two dead letters only, cancel to the pending job only.
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    const toolbar = page.getByRole('toolbar', { name: 'Selected jobs' });
    await toolbar.getByText('3 selected').waitFor();
    await toolbar.getByRole('button', { name: 'Retry selected (2)' }).click();
    await page.getByRole('dialog', { name: 'Retry 2 job(s)?' }).getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('status').filter({ hasText: 'Retried 2 job(s).' }).waitFor();
    assert.equal((await api('GET', `/jobs/${failed}`)).status, 'pending');
    assert.equal((await api('GET', `/jobs/${second}`)).status, 'pending');

    await page.locator(`tr[data-job-id="${waiting}"]`).getByRole('checkbox').check();
    await toolbar.getByRole('button', { name: 'Cancel selected (1)' }).click();
    await page.getByRole('dialog', { name: 'Cancel 1 job(s)?' }).getByRole('button', { name: 'Cancel', exact: true }).last().click();
    await page.getByRole('status').filter({ hasText: 'Cancelled 1 job(s).' }).waitFor();
    assert.equal((await api('GET', `/jobs/${waiting}`)).status, 'cancelled');
    await d.screenshot('jobs-bulk');
    d.assertNoConsoleErrors();
  });

  it('jobs list: cancel all jobs matching the filters, across pages, with progress', SCENARIO, async () => {
    // 120 pending jobs: more than a page of the list (50) and of one listing call (100).
    await api('POST', '/jobs/bulk', { queue_name: 'all-q', jobs: Array.from({ length: 120 }, (_, i) => ({ payload: { i } })) });
    const { id: other } = await api('POST', '/jobs', { queue_name: 'all-other-q', payload: {} });
    const d = await signedIn('/jobs?queue=all-q&status=pending');
    const { page } = d;
    const toolbar = page.getByRole('toolbar', { name: 'Selected jobs' });
    assert.equal(await toolbar.getByRole('button', { name: 'Retry all matching…' }).isDisabled(), true, 'pending jobs cannot be retried');
    await toolbar.getByRole('button', { name: 'Cancel all matching…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel all matching jobs' });
    await dialog.getByTestId('by-filter-count').getByText('120 job(s) match').waitFor({ timeout: 30_000 });
    await dialog.getByRole('button', { name: 'Cancel 120' }).click();
    // 120 requests on a machine that may be running the rest of the suite.
    await dialog.getByTestId('by-filter-progress').getByText('120 of 120').waitFor({ timeout: 60_000 });
    await page.getByRole('status').filter({ hasText: 'Cancelled 120 job(s).' }).waitFor();
    const stats = await api('GET', '/queues/all-q/stats');
    assert.equal(stats.pending_jobs, 0, JSON.stringify(stats));
    assert.equal((await api('GET', `/jobs/${other}`)).status, 'pending', 'another queue is left alone');
    await dialog.getByRole('button', { name: 'Close', exact: true }).last().click();
    d.assertNoConsoleErrors();
  });

  it('workers are named by hostname, in the list and on the job they run', SCENARIO, async () => {
    const { id: workerId } = await api('POST', '/workers/register', { queue_name: 'host-q', hostname: 'render-box-7.local', max_concurrency: 2 });
    const { id: jobId } = await api('POST', '/jobs', { queue_name: 'host-q', payload: {} });
    await api('POST', '/jobs/claim', { queue_name: 'host-q', worker_id: workerId });

    const d = await signedIn('/workers');
    const row = d.page.locator(`tr[data-worker-id="${workerId}"]`);
    await row.getByRole('link', { name: 'render-box-7.local' }).click();
    await d.page.getByRole('dialog', { name: 'Worker render-box-7.local' }).waitFor();

    await d.page.goto(`/jobs/${jobId}`);
    await d.page.locator('.facts').getByRole('link', { name: 'render-box-7.local' }).waitFor();
    d.assertNoConsoleErrors();
  });
});
