/**
 * The README's dashboard screenshots (`node --import tsx scripts/screenshots.ts`): starts a server
 * on a database of its own (an embedded PostgreSQL, or a new database on DATABASE_URL's server),
 * runs a week of activity over four queues through the HTTP API, failures, retries and dead
 * letters included, then drives chromium (playwright-core; CHROMIUM_PATH, default
 * /usr/bin/chromium) over the Overview, a queue's page, a running job's page and the Operator's
 * doctor, writing docs/img/dashboard-*.png.
 *
 * A week cannot be waited for, so the transitions are made through the API and then moved back to
 * the time they are meant to have had (the history rows and the jobs' timestamps, in the database),
 * before the activity history is rolled up: the last two hours job by job, the rest of the week in
 * slots whose jobs go through bulk enqueues, claims and batch reports: the server runs with
 * STATS_ROLLUP=off and this script rolls up once everything is in place. The jobs left at the end
 * (a backlog, a running job with progress and logs) are of now.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createPool, organizationCreate, QueueStatsRollup } from '@spool/engine';
import { loadConfig, startSpool } from '@spool/server';
import { launchBrowser, signIn } from '../packages/dashboard/test/browser.js';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';

const OUT = fileURLToPath(new URL('../docs/img/', import.meta.url));
const ADMIN_KEY = 'screenshots-admin-key';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A fixed seed: the same week every run, give or take the clock. */
let seed = 20;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
/** Between `lo` and `hi` on a log scale, most values in the middle: how durations spread. */
const spread = (lo: number, hi: number) => Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * ((random() + random() + random()) / 3));

interface QueueKind {
  name: string;
  share: number;
  wait: [number, number];
  run: [number, number];
  /** Chance that an attempt fails (retried while retries remain). */
  fail: number;
  /** Chance that a job fails for good at once (retryable: false). */
  poison: number;
  retries: number;
  errors: string[];
  payload(i: number): Record<string, unknown>;
}

const QUEUES: QueueKind[] = [
  {
    name: 'emails', share: 0.45, wait: [30, 1500], run: [80, 900], fail: 0.03, poison: 0.004, retries: 3,
    errors: ['SMTP 451 4.7.1: try again later', 'connect ETIMEDOUT 10.0.4.12:587'],
    payload: (i) => ({ to: `customer${i}@example.com`, template: pick(['receipt', 'welcome', 'password-reset', 'shipping-update']) }),
  },
  {
    name: 'thumbnails', share: 0.3, wait: [200, 6000], run: [600, 7000], fail: 0.05, poison: 0.01, retries: 2,
    errors: ['ImageMagick: corrupt JPEG data: premature end of data segment', 'S3 GetObject: SlowDown (503)'],
    payload: (i) => ({ image: `uploads/2026/12/img_${10_000 + i}.jpg`, sizes: [160, 640, 1280] }),
  },
  {
    name: 'webhooks-out', share: 0.2, wait: [20, 600], run: [40, 3000], fail: 0.12, poison: 0.006, retries: 4,
    errors: ['POST https://hooks.partner.example/orders: 502 Bad Gateway', 'POST https://crm.example.net/events: timeout after 10 s'],
    payload: (i) => ({ event: pick(['order.created', 'order.paid', 'order.shipped']), order_id: 50_000 + i }),
  },
  {
    name: 'reports', share: 0.05, wait: [500, 30_000], run: [12_000, 150_000], fail: 0.05, poison: 0, retries: 1,
    errors: ['connection reset by peer (warehouse-db:5432)'],
    payload: (i) => ({ report: pick(['daily-sales', 'inventory', 'churn']), run: i }),
  },
];

/** More by day than by night (UTC), between 0.35 and 1. */
const busy = (t: number) => 0.35 + 0.65 * Math.max(0, Math.sin(((new Date(t).getUTCHours() - 5) / 24) * 2 * Math.PI));

/** Jobs per hour at the busiest time of day, over every queue. */
const PEAK_PER_HOUR = 300;

/** When the jobs of the last two hours were enqueued, one by one; a burst 25 minutes ago. */
function recentTimes(now: number): number[] {
  const times: number[] = [];
  for (let m = 120; m >= 1; m--) {
    const start = now - m * MINUTE;
    const mean = (PEAK_PER_HOUR / 60) * busy(start);
    const n = Math.round(mean * (0.5 + random())) + (m >= 24 && m <= 26 ? 14 : 0);
    for (let k = 0; k < n; k++) times.push(start + random() * MINUTE);
  }
  return times.sort((a, b) => a - b);
}

const startedAt = Date.now();
const scratch = await startScratchPostgres({ prefix: 'spool-screenshots-' });
const databaseUrl = await scratch.createDatabase(`spool_screenshots_${process.pid}`);
const config = {
  ...loadConfig({ STATS_ROLLUP: 'off' }),
  databaseUrl,
  dataDir: mkdtempSync(join(tmpdir(), 'spool-screenshots-data-')),
  host: '127.0.0.1',
  port: 0,
  grpcPort: 0,
  logLevel: 'silent',
  adminApiKey: ADMIN_KEY,
  defaultPlan: 'unlimited' as const,
  authCacheMs: 2000,
};
const spool = await startSpool(config, { logger: pino({ level: 'silent' }), announce: () => {} });
const db = createPool({ connectionString: databaseUrl, max: 2, applicationName: 'spool-screenshots' });
const browser = await launchBrowser();
try {
  const org = await organizationCreate(db, { name: 'Acme Shop', slug: 'acme-shop', planTier: 'unlimited', environment: 'production' });
  const key = org.apiKey.key;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${spool.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const historyMark = async () => Number((await db.query('SELECT coalesce(max(id), 0) AS id FROM spool.job_history')).rows[0].id);
  /** Moves the history rows written since `mark` to `times`, in order, and the job's own timestamps with them. */
  const backdate = async (mark: number, jobId: string, times: number[], firstStart: number | null, end: number | null) => {
    const moved = await db.query(
      `UPDATE spool.job_history h SET created_at = v.t
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM spool.job_history WHERE id > $1) r
       JOIN unnest($2::timestamptz[]) WITH ORDINALITY AS v(t, n) USING (n)
       WHERE h.id = r.id`,
      [mark, times.map((t) => new Date(t).toISOString())],
    );
    if (moved.rowCount !== times.length) throw new Error(`job ${jobId}: ${moved.rowCount} history rows for ${times.length} transitions`);
    await db.query('UPDATE spool.jobs SET created_at = $2::timestamptz, started_at = coalesce($3::timestamptz, started_at), completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE $4::timestamptz END, updated_at = coalesce($4::timestamptz, $2::timestamptz) WHERE id = $1', [jobId, new Date(times[0]!), firstStart === null ? null : new Date(firstStart), end === null ? null : new Date(end)]);
    if (end !== null) await db.query('UPDATE spool.dead_letter_queue SET created_at = $2 WHERE job_id = $1', [jobId, new Date(end)]);
  };

  // Retries due at once while the week is replayed; the usual backoff afterwards.
  for (const q of QUEUES) await api('PUT', `/queues/${q.name}/config`, { backoff_base_ms: 0, backoff_max_ms: 0, backoff_jitter_ms: 0 });
  const now = Date.now();
  // Before the last two hours: the week in slots (every 2 minutes over the last day, every 20 before),
  // each slot's jobs per queue as one bulk enqueue, claim and batch report, so a week costs a few thousand requests.
  const stamp = async (mark: number, at: number) => {
    await db.query('UPDATE spool.job_history SET created_at = $2 WHERE id > $1', [mark, new Date(at)]);
    return historyMark();
  };
  let slots = 0;
  let slotJobs = 0;
  for (let slotStart = now - 7 * 24 * HOUR; slotStart < now - 2 * HOUR; slotStart += slotStart < now - 24 * HOUR ? 20 * MINUTE : 2 * MINUTE) {
    const length = slotStart < now - 24 * HOUR ? 20 : 2;
    for (const q of QUEUES) {
      const n = Math.round((PEAK_PER_HOUR / 60) * length * q.share * busy(slotStart) * (0.6 + random() * 0.8));
      if (n === 0) continue;
      const worker_id = `${q.name}-worker-${1 + (slots % 3)}`;
      const t0 = slotStart + random() * (length - 1) * MINUTE;
      let mark = await historyMark();
      const created = await api('POST', '/jobs/bulk', { queue_name: q.name, default_max_retries: q.retries, jobs: Array.from({ length: n }, (_, k) => ({ payload: q.payload(slotJobs + k) })) });
      const ids: string[] = created.succeeded.map((x: { job_id: string }) => x.job_id);
      mark = await stamp(mark, t0);
      const claimedAt = t0 + spread(...q.wait) * 2;
      const claimed: { id: string; lease_id: string }[] = (await api('POST', '/jobs/claim', { queue_name: q.name, worker_id, limit: n })).jobs;
      mark = await stamp(mark, claimedAt);
      const waits = claimed.map(() => Math.min(claimedAt - t0, spread(...q.wait)));
      const runs = claimed.map(() => spread(...q.run));
      const doneAt = claimedAt + Math.max(...runs);
      const outcome = claimed.map(() => (random() < q.poison ? 'poison' : random() < q.fail ? 'retry' : 'complete'));
      const items = (kind: string) => claimed.filter((_, k) => outcome[k] === kind);
      const failing = [...items('retry'), ...items('poison')];
      if (failing.length) {
        await api('POST', '/jobs/fail', { worker_id, items: failing.map((j) => ({ job_id: j.id, lease_id: j.lease_id, error: pick(q.errors), retryable: outcome[claimed.indexOf(j)] !== 'poison' })) });
        mark = await stamp(mark, claimedAt + Math.min(...runs));
      }
      if (items('complete').length) {
        await api('POST', '/jobs/complete', { worker_id, items: items('complete').map((j) => ({ job_id: j.id, lease_id: j.lease_id, result: { ok: true } })) });
        mark = await stamp(mark, doneAt);
      }
      if (items('retry').length) {
        const again: { id: string; lease_id: string }[] = (await api('POST', '/jobs/claim', { queue_name: q.name, worker_id, limit: items('retry').length })).jobs;
        mark = await stamp(mark, doneAt + 2000);
        await api('POST', '/jobs/complete', { worker_id, items: again.map((j) => ({ job_id: j.id, lease_id: j.lease_id, result: { ok: true, attempt: 2 } })) });
        mark = await stamp(mark, doneAt + 2000 + spread(...q.run));
      }
      // Each job's own wait and run, on its row (the history rows of a slot share their times).
      await db.query(
        `UPDATE spool.jobs j SET created_at = to_timestamp(($2::float8 - v.wait) / 1000), started_at = to_timestamp(($3::float8 - v.run) / 1000),
                completed_at = CASE WHEN j.completed_at IS NULL THEN NULL ELSE to_timestamp($3::float8 / 1000) END,
                updated_at = to_timestamp($3::float8 / 1000)
         FROM unnest($1::uuid[], $4::float8[], $5::float8[]) AS v(id, wait, run) WHERE j.id = v.id`,
        [claimed.map((j) => j.id), claimedAt, doneAt, waits, runs],
      );
      await db.query('UPDATE spool.dead_letter_queue SET created_at = $2 WHERE job_id = ANY($1::uuid[])', [ids, new Date(claimedAt + Math.min(...runs))]);
      slotJobs += n;
    }
    slots++;
  }
  console.error(`[screenshots] ${slotJobs} jobs in ${slots} slots up to two hours ago`);
  const times = recentTimes(now);
  console.error(`[screenshots] replaying the last two hours, ${times.length} jobs one by one…`);
  let i = 0;
  for (const t0 of times) {
    i++;
    const roll = random();
    let acc = 0;
    const q = QUEUES.find((kind) => (acc += kind.share) >= roll) ?? QUEUES[0]!;
    // The job's life first, so that none ends after now.
    const attempts: { wait: number; run: number; outcome: 'complete' | 'retry' | 'poison' | 'final' }[] = [];
    for (let attempt = 0; ; attempt++) {
      const wait = attempt === 0 ? spread(...q.wait) : spread(500, 20_000);
      const run = spread(...q.run);
      const poison = random() < q.poison;
      const failed = poison || random() < q.fail;
      attempts.push({ wait, run, outcome: poison ? 'poison' : failed ? (attempt < q.retries ? 'retry' : 'final') : 'complete' });
      if (!failed || poison || attempt >= q.retries) break;
    }
    const total = attempts.reduce((sum, a) => sum + a.wait + a.run, 0);
    const start = Math.min(t0, now - 3000 - total);
    const mark = await historyMark();
    const { id } = await api('POST', '/jobs', { queue_name: q.name, payload: q.payload(i), max_retries: q.retries });
    const stamps = [start];
    let at = start;
    let firstStart: number | null = null;
    for (const a of attempts) {
      const [job] = (await api('POST', '/jobs/claim', { queue_name: q.name, worker_id: `${q.name}-worker-${1 + (i % 3)}`, limit: 1 })).jobs;
      if (job?.id !== id) throw new Error(`claimed ${job?.id} instead of ${id}`);
      at += a.wait;
      stamps.push(at);
      firstStart ??= at;
      at += a.run;
      stamps.push(at);
      const worker = { worker_id: `${q.name}-worker-${1 + (i % 3)}`, lease_id: job.lease_id };
      if (a.outcome === 'complete') await api('POST', `/jobs/${id}/complete`, { ...worker, result: { ok: true, ms: Math.round(a.run) } });
      else await api('POST', `/jobs/${id}/fail`, { ...worker, error: pick(q.errors), ...(a.outcome === 'poison' ? { retryable: false } : {}) });
    }
    await backdate(mark, id, stamps, firstStart, at);
    if (i % 250 === 0) console.error(`[screenshots] ${i} of ${times.length}`);
  }
  for (const q of QUEUES) await api('PUT', `/queues/${q.name}/config`, { backoff_base_ms: 1000, backoff_max_ms: 60_000, backoff_jitter_ms: 500 });

  // Now: a worker per queue, and a report that failed once and is running again, with progress and log lines.
  const workers = new Map<string, string>();
  for (const [n, q] of QUEUES.entries()) {
    const registered = await api('POST', '/workers/register', { queue_name: q.name, hostname: `worker-${n + 1}.prod.internal`, worker_type: 'node', max_concurrency: q.name === 'reports' ? 2 : 20, version: '1.4.2' });
    workers.set(q.name, registered.id);
  }
  const heartbeat = async () => {
    for (const id of workers.values()) await api('POST', `/workers/${id}/heartbeat`, { status: 'healthy' });
  };
  const mark = await historyMark();
  const { id: reportId } = await api('POST', '/jobs', { queue_name: 'reports', payload: { report: 'monthly-invoices', month: '2026-11' }, max_retries: 2 });
  const worker = { worker_id: workers.get('reports')! };
  let [job] = (await api('POST', '/jobs/claim', { queue_name: 'reports', ...worker, lease_duration_secs: 3600 })).jobs;
  await api('POST', `/jobs/${reportId}/fail`, { ...worker, lease_id: job.lease_id, error: 'connection reset by peer (warehouse-db:5432)' });
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the first retry's backoff: 1 s and up to 0.5 s of jitter
  [job] = (await api('POST', '/jobs/claim', { queue_name: 'reports', ...worker, lease_duration_secs: 3600 })).jobs;
  if (job?.id !== reportId) throw new Error('the running report was not claimed again');
  const t = Date.now();
  await backdate(mark, reportId, [t - 4 * MINUTE, t - 4 * MINUTE + 1200, t - 3 * MINUTE, t - 3 * MINUTE + 1300], t - 4 * MINUTE + 1200, null);
  await db.query('UPDATE spool.jobs SET scheduled_at = $2 WHERE id = $1', [reportId, new Date(t - 3 * MINUTE + 1100)]);
  const held = { ...worker, lease_id: job.lease_id };
  await api('POST', `/jobs/${reportId}/logs`, { ...held, lines: ['connecting to warehouse-db (replica 2)', 'fetched 48,210 invoice rows in 3.4 s', 'rendering 50 pages, 6 per batch'] });
  for (const page of [6, 12, 18, 24, 31]) await api('POST', `/jobs/${reportId}/logs`, { ...held, lines: [`rendered pages ${page - 5}-${page}`] });
  await api('POST', `/jobs/${reportId}/progress`, { ...held, percent: 62, message: 'rendering page 31 of 50' });
  // A backlog, and a few jobs in flight.
  await api('POST', '/jobs/bulk', { queue_name: 'thumbnails', jobs: Array.from({ length: 38 }, (_, k) => ({ payload: QUEUES[1]!.payload(90_000 + k) })) });
  await api('POST', '/jobs/bulk', { queue_name: 'emails', jobs: Array.from({ length: 9 }, (_, k) => ({ payload: QUEUES[0]!.payload(90_000 + k) })) });
  await api('POST', '/jobs/claim', { queue_name: 'thumbnails', worker_id: workers.get('thumbnails'), limit: 4, lease_duration_secs: 3600 });
  // The rest has been waiting for a few minutes already, as a backlog does.
  await db.query(`UPDATE spool.jobs SET created_at = now() - random() * interval '4 minutes' WHERE status = 'pending' AND queue_name IN ('thumbnails', 'emails')`);
  await heartbeat();

  const rollup = new QueueStatsRollup(db);
  await rollup.drain();
  console.error(`[screenshots] seeded in ${Math.round((Date.now() - startedAt) / 1000)} s; rolled up ${JSON.stringify(Object.fromEntries(rollup.counters))}`);

  mkdirSync(OUT, { recursive: true });
  const context = await browser.newContext({ baseURL: spool.url, viewport: { width: 1280, height: 900 }, colorScheme: 'light', reducedMotion: 'reduce' });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const shot = async (name: string) => {
    // Charts draw on the next frame after their data arrives.
    await page.waitForTimeout(600);
    const path = `${OUT}${name}.png`;
    await page.screenshot({ path, fullPage: true });
    console.error(`[screenshots] ${path.slice(path.indexOf('docs/'))}: ${Math.round(statSync(path).size / 1024)} kB`);
  };
  const activity = async (range: 'hour' | 'day' | 'week') => {
    await page.locator(`section.activity[data-range="${range}"][data-loaded="true"]`).waitFor();
    const completed = Number(await page.locator('section.activity').getAttribute('data-completed'));
    if (!(completed > 0)) throw new Error(`the ${range}'s activity chart is empty on ${page.url()}`);
  };
  await signIn(page, key);
  await page.goto('/');
  await activity('hour');
  await page.locator('figure.chart', { hasText: 'Queue depth' }).waitFor();
  await shot('dashboard-overview');

  await page.goto('/queues/thumbnails');
  await page.getByRole('heading', { level: 1, name: 'thumbnails' }).waitFor();
  await page.getByRole('group', { name: 'Time range' }).getByRole('button', { name: 'Last 7 days' }).click();
  await activity('week');
  await shot('dashboard-queue');
  await page.getByRole('group', { name: 'Time range' }).getByRole('button', { name: 'Last hour' }).click();

  await page.goto(`/jobs/${reportId}`);
  await page.getByTestId('job-reports').getByRole('progressbar', { name: 'Job progress' }).waitFor();
  await page.getByTestId('timeline').locator('[data-event="fail_retry"]').waitFor();
  await shot('dashboard-job');

  await page.goto('/operator');
  await page.getByLabel('Admin key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Open the doctor' }).click();
  await page.getByTestId('doctor').locator('tr[data-check="dead_tuples:jobs"]').waitFor();
  await shot('dashboard-operator');
  await context.close();
  if (errors.length) throw new Error(`the dashboard threw: ${errors.join('; ')}`);
  console.error(`[screenshots] done in ${Math.round((Date.now() - startedAt) / 1000)} s`);
} finally {
  await browser.close();
  await db.end();
  await spool.stop();
  await scratch.stop();
  rmSync(config.dataDir, { recursive: true, force: true });
}
