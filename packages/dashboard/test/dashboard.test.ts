/**
 * The dashboard end to end: Debian's chromium (headless, through
 * playwright-core) against a real Spool server over a real database. One
 * browser for the file; one context per scenario. Every scenario fails on
 * console errors and saves screenshots under packages/dashboard/test-artifacts/.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { SCENARIO, launchBrowser, openDashboard, signIn, waitForLive, type DashboardPage } from './browser.js';

let server: TestServer;
let browser: Browser;
const open: DashboardPage[] = [];

before(async () => {
  [server, browser] = await Promise.all([startTestServer('dashboard', { secretsKey: randomBytes(32) }), launchBrowser()]);
});
after(async () => {
  await Promise.all(open.map((d) => d.close().catch(() => {})));
  await browser?.close();
  await server?.close();
});

const api = async (method: string, path: string, body?: unknown, auth?: string) => {
  const res = await server.request(method, `/api/v1${path}`, { body, auth });
  assert.ok(res.status < 300, `${method} ${path} → ${res.status} ${res.text}`);
  return res.body;
};

async function dashboard(viewport?: { width: number; height: number }): Promise<DashboardPage> {
  const d = await openDashboard(browser, server.url, viewport);
  open.push(d);
  return d;
}

/** Dashboard signed in with the organization's key, on `path`. */
async function signedIn(path = '/'): Promise<DashboardPage> {
  const d = await dashboard();
  await signIn(d.page, server.apiKey);
  if (path !== '/') await d.page.goto(path);
  return d;
}

/** Enqueues, runs and fails a few dozen jobs over the API, as a worker would. */
async function traffic(): Promise<void> {
  for (const [queue, count, failEvery] of [['emails', 30, 6], ['thumbnails', 18, 0]] as const) {
    await api('POST', '/jobs/bulk', { queue_name: queue, default_max_retries: 0, jobs: Array.from({ length: count }, (_, i) => ({ payload: { i } })) });
    const { jobs } = await api('POST', '/jobs/claim', { queue_name: queue, worker_id: `${queue}-worker`, limit: count - 5 });
    for (const [i, job] of (jobs as { id: string; lease_id: string }[]).entries()) {
      const failed = failEvery > 0 && i % failEvery === 0;
      await api('POST', `/jobs/${job.id}/${failed ? 'fail' : 'complete'}`, { worker_id: `${queue}-worker`, lease_id: job.lease_id, ...(failed ? { error: 'SMTP 451: try again later' } : { result: { ok: true } }) });
    }
  }
}

async function heading(page: Page, name: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

describe('dashboard', () => {
  it('signs in with an API key, keeps the session across reloads, and signs out', SCENARIO, async () => {
    const d = await dashboard();
    const { page } = d;
    await page.goto('/jobs?status=failed');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('API key').fill('sk_test_not-a-real-key-at-all-000000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();

    await page.getByLabel('API key').fill(server.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Jobs');
    assert.equal(await page.getByRole('combobox', { name: /^Status/ }).inputValue(), 'failed', 'the URL\'s filter survives sign-in');
    const stored = await page.evaluate(() => sessionStorage.getItem('spool.session') ?? '');
    assert.match(stored, /"kind":"jwt"/, 'the key was exchanged for a JWT session');
    assert.ok(!stored.includes(server.apiKey), 'the API key itself is not stored');

    await page.reload();
    await heading(page, 'Jobs');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('spool.session')), null);
    // The failed sign-in is a 401 the browser reports on its own.
    d.assertNoConsoleErrors([/status of 401/]);
  });

  it('shows a job enqueued through the API without reloading, then its timeline as it runs', SCENARIO, async () => {
    const d = await signedIn('/jobs?queue=live-q');
    const { page } = d;
    await waitForLive(page);
    await page.getByText('No jobs match').waitFor();
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));

    const { id } = await api('POST', '/jobs', { queue_name: 'live-q', payload: { hello: 'dashboard' }, tags: { team: 'ui' } });
    const row = page.locator(`tr[data-job-id="${id}"]`);
    await row.waitFor();
    assert.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 42, 'the page was not reloaded');
    assert.equal(await row.locator('[data-status]').textContent(), 'pending');

    await row.getByRole('link').click();
    await heading(page, `Job ${id.slice(-8)}`);
    await page.getByText('"hello": "dashboard"').waitFor();
    const timeline = page.getByTestId('timeline');
    await timeline.locator('[data-event="create"]').waitFor();

    const [claimed] = (await api('POST', '/jobs/claim', { queue_name: 'live-q', worker_id: 'ui-worker' })).jobs;
    await api('POST', `/jobs/${id}/complete`, { worker_id: 'ui-worker', lease_id: claimed.lease_id, result: { ok: true } });
    await timeline.locator('[data-event="complete"]').waitFor();
    assert.deepEqual(await timeline.locator('[data-event]').evaluateAll((items) => items.map((i) => i.getAttribute('data-event'))), ['create', 'claim', 'complete']);
    await page.getByText('"ok": true').waitFor();
    await d.screenshot('job-detail');
    d.assertNoConsoleErrors();
  });

  it("shows a job's key and the debounce that changed it", SCENARIO, async () => {
    const jobKey = { key: 'doc-42', mode: 'debounce', window_secs: 300 };
    const { id } = await api('POST', '/jobs', { queue_name: 'keyed-q', payload: { rev: 1 }, job_key: jobKey });
    const again = await api('POST', '/jobs', { queue_name: 'keyed-q', payload: { rev: 2 }, job_key: jobKey });
    assert.equal(again.key_outcome, 'debounced');
    const d = await signedIn(`/jobs/${id}`);
    const { page } = d;
    await heading(page, `Job ${id.slice(-8)}`);
    const key = page.getByTestId('job-key');
    await key.getByText('doc-42').waitFor();
    await key.getByText(/debounce: later enqueues replace its payload/).waitFor();
    await page.getByTestId('timeline').locator('[data-event="debounce"]').getByText('Debounced by a later enqueue of its key').waitFor();
    await page.getByText('"rev": 2').waitFor();
    d.assertNoConsoleErrors();
  });

  it("shows a running job's progress and log lines live on its page", SCENARIO, async () => {
    const { id } = await api('POST', '/jobs', { queue_name: 'report-q', payload: { video: 'intro.mp4' } });
    const [claimed] = (await api('POST', '/jobs/claim', { queue_name: 'report-q', worker_id: 'ui-encoder' })).jobs;
    const worker = { worker_id: 'ui-encoder', lease_id: claimed.lease_id };
    await api('POST', `/jobs/${id}/logs`, { ...worker, lines: ['probing intro.mp4'] });
    const d = await signedIn(`/jobs/${id}`);
    const { page } = d;
    await heading(page, `Job ${id.slice(-8)}`);
    await waitForLive(page);
    const reports = page.getByTestId('job-reports');
    await reports.getByText('The worker has not reported progress.').waitFor();
    await reports.getByTestId('job-log').getByText('probing intro.mp4').waitFor();

    await api('POST', `/jobs/${id}/progress`, { ...worker, percent: 40, message: 'encoding 720p' });
    const bar = reports.getByRole('progressbar', { name: 'Job progress' });
    await bar.waitFor();
    await page.waitForFunction(() => document.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow') === '40');
    assert.equal(await reports.getByTestId('progress-message').textContent(), 'encoding 720p');
    await api('POST', `/jobs/${id}/logs`, { ...worker, lines: ['720p: frame 1200/3000', '720p: frame 3000/3000'] });
    await api('POST', `/jobs/${id}/progress`, { ...worker, percent: 75 });
    await reports.getByText('720p: frame 3000/3000').waitFor();
    await page.waitForFunction(() => document.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow') === '75');
    assert.equal(await reports.getByTestId('progress-message').textContent(), 'encoding 720p', 'an update without a message keeps it');
    assert.deepEqual(await reports.locator('.job-log-line').allTextContents(), ['probing intro.mp4', '720p: frame 1200/3000', '720p: frame 3000/3000']);
    await d.screenshot('job-progress');

    await api('POST', `/jobs/${id}/complete`, { ...worker, result: { encoded: true } });
    await page.getByTestId('timeline').locator('[data-event="complete"]').waitFor();
    await reports.getByText('720p: frame 3000/3000').waitFor();
    d.assertNoConsoleErrors();
  });

  it('replays a dead-lettered job from the dead-letter page', SCENARIO, async () => {
    const { id } = await api('POST', '/jobs', { queue_name: 'dlq-q', payload: { n: 1 }, max_retries: 0 });
    const [claimed] = (await api('POST', '/jobs/claim', { queue_name: 'dlq-q', worker_id: 'w-dlq' })).jobs;
    await api('POST', `/jobs/${id}/fail`, { worker_id: 'w-dlq', lease_id: claimed.lease_id, error: 'smtp timeout after 30 s' });
    assert.equal((await api('GET', `/jobs/${id}`)).status, 'deadletter');

    const d = await signedIn('/dead-letters?queue=dlq-q');
    const { page } = d;
    const row = page.locator(`tr[data-job-id="${id}"]`);
    await row.getByRole('button', { name: 'Inspect' }).click();
    await page.locator('.inspect').getByText('smtp timeout after 30 s').waitFor();
    await d.screenshot('dead-letters');

    await row.getByRole('button', { name: 'Replay' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay dead letters?' });
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('No dead letters').waitFor();
    const job = await api('GET', `/jobs/${id}`);
    assert.equal(job.status, 'pending');
    assert.equal(job.retry_count, 0);
    d.assertNoConsoleErrors();
  });

  it("edits a dead-lettered job's payload from its page; it stays dead-lettered and the edit is in its history", SCENARIO, async () => {
    const { id } = await api('POST', '/jobs', { queue_name: 'edit-q', payload: { to: 'old@example.com' }, max_retries: 0 });
    const [claimed] = (await api('POST', '/jobs/claim', { queue_name: 'edit-q', worker_id: 'w-edit' })).jobs;
    await api('POST', `/jobs/${id}/fail`, { worker_id: 'w-edit', lease_id: claimed.lease_id, error: 'bad address' });

    const d = await signedIn(`/jobs/${id}`);
    const { page } = d;
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit this job' });
    await dialog.getByLabel('Payload (JSON)').fill('{ "to": "new@example.com" }');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByText('"to": "new@example.com"').waitFor();
    await page.getByTestId('timeline').locator('[data-event="edit"]').getByText('changed payload').waitFor();
    await d.screenshot('job-edited');
    const job = await api('GET', `/jobs/${id}`);
    assert.deepEqual([job.status, job.payload], ['deadletter', { to: 'new@example.com' }]);
    d.assertNoConsoleErrors();
  });

  it('configures flow control for a queue: rate limit, burst, per-key limit, fair share with weights', SCENARIO, async () => {
    await api('PUT', '/queues/flow-q/config', { max_retries: 2 });
    const d = await signedIn('/queues');
    const { page } = d;
    await page.locator('tr[data-queue="flow-q"]').getByRole('button', { name: 'Configure' }).click();
    const dialog = page.getByRole('dialog', { name: 'Configure flow-q' });
    await dialog.getByLabel(/^Rate limit \(jobs\/s/).fill('50');
    await dialog.getByLabel(/^Rate limit burst/).fill('5');
    await dialog.getByLabel(/^Per-key concurrency limit/).fill('1');
    await dialog.getByLabel(/^Fair share/).selectOption('round_robin');
    await dialog.getByLabel(/^Fairness weights/).fill('vip = 3\nbad line');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'line 2' }).waitFor();
    await dialog.getByLabel(/^Fairness weights/).fill('vip = 3\nacme=2');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    const config = await api('GET', '/queues/flow-q');
    assert.deepEqual([config.rate_limit, config.rate_limit_burst, config.concurrency_key_limit, config.fairness, config.max_retries], [50, 5, 1, 'round_robin', 2]);
    assert.deepEqual(config.fairness_weights, [{ key: 'acme', weight: 2 }, { key: 'vip', weight: 3 }]);
    d.assertNoConsoleErrors();
  });

  it('pauses and resumes a queue', SCENARIO, async () => {
    await api('PUT', '/queues/pause-q/config', { max_retries: 2 });
    await api('POST', '/jobs', { queue_name: 'pause-q', payload: {} });
    const d = await signedIn('/queues');
    const { page } = d;
    const row = page.locator('tr[data-queue="pause-q"]');
    await row.getByRole('button', { name: 'Pause' }).click();
    const dialog = page.getByRole('dialog', { name: 'Pause pause-q?' });
    await dialog.getByLabel('Reason (optional)').fill('deploying');
    await dialog.getByRole('button', { name: 'Pause queue' }).click();
    await row.locator('[data-status="paused"]').waitFor();
    assert.equal((await api('GET', '/queues/pause-q')).enabled, false);
    assert.deepEqual((await api('POST', '/jobs/claim', { queue_name: 'pause-q', worker_id: 'w' })).jobs, [], 'a paused queue hands out nothing');
    await d.screenshot('queues');

    await row.getByRole('button', { name: 'Resume' }).click();
    await row.locator('[data-status="active"]').waitFor();
    assert.equal((await api('GET', '/queues/pause-q')).enabled, true);
    d.assertNoConsoleErrors();
  });

  it("explains why a job of a paused queue is not running, and updates when the queue resumes", SCENARIO, async () => {
    await api('POST', '/queues/why-q/pause', { reason: 'db migration' });
    const { id } = await api('POST', '/jobs', { queue_name: 'why-q', payload: {}, scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
    const d = await signedIn(`/jobs/${id}`);
    const { page } = d;
    await heading(page, `Job ${id.slice(-8)}`);
    const panel = page.getByTestId('job-explain');
    await panel.getByRole('heading', { name: "Why isn't it running?" }).waitFor();
    const paused = panel.locator('[data-code="queue_paused"]');
    await paused.getByText(/Queue "why-q" is paused since .*db migration.*resume it with POST \/api\/v1\/queues\/why-q\/resume/).waitFor();
    await panel.locator('[data-code="scheduled"]').getByTestId('explain-until').getByText(/^until .*\(in /).waitFor();
    await waitForLive(page);
    await d.screenshot('job-explain');
    await api('POST', '/queues/why-q/resume');
    await paused.waitFor({ state: 'detached' });
    assert.equal(await panel.getAttribute('data-runnable'), 'false', 'still scheduled');
    d.assertNoConsoleErrors();
  });

  it('creates a schedule with a live preview of its next fire times', SCENARIO, async () => {
    const d = await signedIn('/schedules');
    const { page } = d;
    await page.getByRole('button', { name: 'New schedule' }).click();
    const dialog = page.getByRole('dialog', { name: 'New schedule' });
    await dialog.getByLabel('Name').fill('nightly report');
    await dialog.getByLabel('Queue').fill('reports');
    await dialog.getByLabel('Time zone').fill('Europe/Kyiv');
    const cron = dialog.getByLabel(/Cron expression/);
    await cron.fill('0 30 2 * * *');
    const preview = dialog.getByTestId('schedule-preview');
    const runsOf = (expression: string) => preview.locator(`ol[data-for="${expression} @ Europe/Kyiv"] li`);
    await runsOf('0 30 2 * * *').nth(4).waitFor();
    const runs = await runsOf('0 30 2 * * *').allTextContents();
    assert.equal(runs.length, 5);
    for (const run of runs) assert.match(run, /02:30:00/, 'fire times are shown in the schedule\'s zone');

    await cron.fill('0 0 25 * * *');
    await preview.locator('.form-error').waitFor();
    await cron.fill('0 30 2 * * *');
    await runsOf('0 30 2 * * *').nth(4).waitFor();
    await d.screenshot('schedule-new');

    await dialog.getByRole('button', { name: 'Create schedule' }).click();
    await heading(page, 'nightly report');
    const [schedule] = await api('GET', '/schedules');
    assert.equal(schedule.name, 'nightly report');
    assert.equal(schedule.cron_expression, '0 30 2 * * *');
    assert.equal(schedule.timezone, 'Europe/Kyiv');

    await page.getByRole('button', { name: 'Trigger now' }).click();
    await page.locator('.card').filter({ hasText: 'Run history' }).locator('tbody tr').first().waitFor();
    d.assertNoConsoleErrors([/status of 400/]);
  });

  it('shows the queue doctor to the operator with the admin key', SCENARIO, async () => {
    const d = await signedIn('/operator');
    const { page } = d;
    await page.getByLabel('Admin key').fill('wrong-key');
    await page.getByRole('button', { name: 'Open the doctor' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Admin key').fill('test-admin-key');
    await page.getByRole('button', { name: 'Open the doctor' }).click();
    const doctor = page.getByTestId('doctor');
    await doctor.locator('tr[data-check="oldest_transaction_age_seconds"]').waitFor();
    await doctor.locator('tr[data-check="dead_tuples:jobs_live"]').waitFor();
    await d.screenshot('operator');
    d.assertNoConsoleErrors([/status of 401/]);
  });

  it('creates a key limited to queues and a role', SCENARIO, async () => {
    const d = await dashboard();
    const { page } = d;
    await signIn(page, server.apiKey);
    await page.goto('/settings');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByRole('textbox', { name: /^Name/ }).fill('worker host');
    await dialog.getByRole('textbox', { name: /^Queues/ }).fill('emails, mail-*');
    await dialog.getByRole('combobox', { name: /^Role/ }).selectOption('worker');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-api-key').waitFor();
    const key = (await api('GET', '/api-keys')).find((k: { name: string }) => k.name === 'worker host');
    assert.equal(key.role, 'worker');
    assert.deepEqual(key.queues, ['emails', 'mail-*']);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator(`tr[data-key-id="${key.id}"]`).getByText('worker', { exact: true }).waitFor();
    d.assertNoConsoleErrors();
  });

  it('ends the session when its API key is revoked', SCENARIO, async () => {
    const created = await api('POST', '/api-keys', { name: 'revoke me' });
    const d = await dashboard();
    const { page } = d;
    await signIn(page, created.key);
    await page.goto('/settings');
    const row = page.locator(`tr[data-key-id="${created.id}"]`);
    await row.getByText('this session').waitFor();
    await d.screenshot('settings');
    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke revoke me?' });
    await dialog.getByText('revoking it signs you out').waitFor();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByTestId('session-ended').waitFor();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal((await server.request('GET', '/api/v1/jobs/stats', { auth: created.key })).status, 401);
    d.assertNoConsoleErrors([/status of 401/]);
  });

  it('sets the GitHub signing secret and replaces the webhook token from Settings', SCENARIO, async () => {
    const d = await signedIn('/settings');
    const { page } = d;
    const section = page.getByTestId('incoming-webhooks');
    const before = await section.getByTestId('webhook-token').inputValue();
    assert.equal(before, (await api('GET', '/organizations/webhook-token')).token);

    const row = section.locator('tr[data-provider="github"]');
    await row.locator('[data-status="disabled"]').waitFor();
    await row.getByRole('button', { name: 'Set secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'GitHub signing secret' });
    await dialog.getByLabel('Signing secret').fill('gh-from-the-dashboard');
    await dialog.getByRole('button', { name: 'Save secret' }).click();
    await row.locator('[data-status="active"]').waitFor();
    assert.equal((await api('GET', '/organizations/webhook-secrets')).github.configured, true);
    assert.ok(!(await section.textContent())!.includes('gh-from-the-dashboard'), 'the secret is not shown back');
    const body = JSON.stringify({ zen: 'dashboard' });
    const delivery = await server.request('POST', `/api/v1/webhooks/${server.organizationId}/github`, {
      auth: null, rawBody: body, headers: { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${createHmac('sha256', 'gh-from-the-dashboard').update(body).digest('hex')}` },
    });
    assert.equal(delivery.status, 200, delivery.text);
    await d.screenshot('settings-incoming-webhooks');

    await section.getByRole('button', { name: 'Regenerate token' }).click();
    await page.getByRole('dialog', { name: 'Replace the webhook token?' }).getByRole('button', { name: 'Replace token' }).click();
    await page.waitForFunction((old) => (document.querySelector('[data-testid="webhook-token"]') as HTMLInputElement | null)?.value !== old, before);
    assert.notEqual((await api('GET', '/organizations/webhook-token')).token, before);

    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog', { name: 'Remove the GitHub secret?' }).getByRole('button', { name: 'Remove secret' }).click();
    await row.locator('[data-status="disabled"]').waitFor();
    d.assertNoConsoleErrors();
  });

  it('renders every page, on a wide and a narrow screen', SCENARIO, async () => {
    await api('POST', '/workers/register', { queue_name: 'live-q', hostname: 'worker-1.local', max_concurrency: 8 });
    const workflow = await server.request('POST', '/api/v1/workflows', {
      body: {
        name: 'etl',
        jobs: [
          { key: 'extract', queue_name: 'etl', payload: {} },
          { key: 'transform', queue_name: 'etl', payload: {}, depends_on: ['extract'] },
          { key: 'load', queue_name: 'etl', payload: {}, depends_on: ['transform'] },
          { key: 'notify', queue_name: 'etl', payload: {}, depends_on: ['extract'], on_parent_failure: 'continue' },
        ],
      },
    });
    assert.ok(workflow.status === 200 || workflow.status === 201, workflow.text);

    const d = await signedIn('/');
    const { page } = d;
    const pages: [string, string, string][] = [
      ['/', 'Overview', 'overview'],
      ['/queues', 'Queues', 'queues-list'],
      ['/jobs', 'Jobs', 'jobs'],
      ['/dead-letters', 'Dead letters', 'dead-letters-empty'],
      ['/schedules', 'Schedules', 'schedules'],
      ['/workers', 'Workers', 'workers'],
      ['/workflows', 'Workflows', 'workflows'],
      [`/workflows/${workflow.body.workflow_id}`, 'etl', 'workflow-dag'],
      ['/settings', 'Settings', 'settings-full'],
    ];
    for (const [path, title, name] of pages) {
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Overview' }).waitFor();
      await page.goto(path);
      await heading(page, title);
      await page.locator('.loading').first().waitFor({ state: 'detached' });
      if (name === 'workflow-dag') {
        await page.locator('.dag-node').nth(3).waitFor();
        const keys = await page.locator('.dag-node').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-key')).sort());
        assert.deepEqual(keys, ['extract', 'load', 'notify', 'transform']);
        assert.equal(await page.locator('.dag-edge').count(), 3);
        assert.equal(await page.locator('path.dag-edge[data-policy="continue"]').count(), 1, 'the edge shows its on_parent_failure');
        assert.deepEqual(await page.locator('.dag-legend li').evaluateAll((items) => items.map((i) => i.getAttribute('data-policy'))), ['block', 'continue']);
      }
      await d.screenshot(name);
    }

    // Some traffic while the Overview is open, so its charts have something to draw.
    await page.goto('/');
    await page.locator('.tile').first().waitFor();
    await waitForLive(page);
    await traffic();
    await page.waitForTimeout(5500);
    await d.screenshot('overview');
    d.assertNoConsoleErrors();

    const narrow = await dashboard({ width: 390, height: 844 });
    await signIn(narrow.page, server.apiKey);
    await heading(narrow.page, 'Overview');
    assert.equal(await narrow.page.getByRole('navigation', { name: 'Sections' }).isVisible(), false, 'the menu is folded away');
    await narrow.page.getByRole('button', { name: 'Menu' }).click();
    await narrow.page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Jobs' }).click();
    await heading(narrow.page, 'Jobs');
    const overflow = await narrow.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `the page does not scroll sideways (${overflow}px)`);
    await narrow.screenshot('narrow-jobs');
    narrow.assertNoConsoleErrors();
  });
});
