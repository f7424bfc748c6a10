/**
 * `npm run soak -- --minutes 30`: a steady mixed load against one Spool
 * server, sampled, with bounds asserted at the end (exit 1 when one fails).
 *
 * Its own embedded PostgreSQL (temporary directory), a Spool server in a child
 * process (reliability/soak-server.ts), SDK workers and a load generator in
 * this one. Every second: single enqueues, one bulk enqueue, delayed jobs of
 * which half are cancelled; handlers succeed, fail once and succeed on retry,
 * or throw NonRetryableError (dead letters); two cron schedules fire every
 * 2 s; every 30 s part of the dead-letter queue is replayed. Each queue keeps
 * failed and dead-lettered jobs for `--retention` seconds, and retention runs
 * every few seconds, so a healthy server reaches a steady state.
 *
 * Every `--sample` seconds it prints the server's RSS, open PostgreSQL
 * connections, sizes of spool.jobs_live (the jobs that can still move) and
 * spool.dead_letter_queue (with indexes and TOAST), and job counts. It also
 * shows what is kept by the day, reported and not bounded: completed and
 * cancelled jobs (spool.jobs_done, dropped a day's partition at a time once
 * the day their window ends on is over), spool.job_history (kept a day
 * past the longest window, so that a retained job keeps its timeline) and
 * spool.events (kept 7 days whatever the queues' retention).
 *
 * Bounds (checked on the samples after the warm-up, split in thirds; A is
 * the first third, C the last):
 *   rss          mean(C) ≤ 1.2 × mean(A) + 16 MB
 *   connections  max(C) ≤ max(max(A) + 2, pool size 20 + 1 LISTEN connection)
 *   jobs_live, dead_letter_queue   mean(C) ≤ 1.25 × mean(A) + 0.25 MB
 *   backlog      mean(C) ≤ 1.5 × mean(A) + 2 s of load (pending, due or running jobs: workers keep up)
 *   progress     jobs completed during C > 0, and no server error (5xx) seen by the SDK
 * Warm-up: the first 20 % of the run, and at least the retention window plus
 * two retention sweeps (before that the tables are still filling). Runs
 * under 2 minutes set autovacuum_naptime to 1 s (else the default 60 s).
 *
 * Options: --minutes M | --seconds S (default 30 min), --rate jobs/s (50),
 * --sample s (10; 2 below 2 minutes), --retention s (60; 5 below 2 minutes),
 * --json file (samples and verdict).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { NonRetryableError, ServerError, SpoolClient, Worker } from '@spool/sdk';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';

interface Options {
  seconds: number;
  rate: number;
  sampleSeconds: number;
  retentionSeconds: number;
  json: string | null;
}

function parseArgs(argv: string[]): Options {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"`);
    const [name, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    values.set(name, value);
  }
  const num = (name: string, fallback: number, min: number): number => {
    const raw = values.get(name);
    values.delete(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number ≥ ${min} (got "${raw}")`);
    return n;
  };
  const seconds = values.has('seconds') ? num('seconds', 0, 10) : num('minutes', 30, 0.2) * 60;
  values.delete('minutes');
  const short = seconds < 120;
  const options: Options = {
    seconds,
    rate: num('rate', 50, 1),
    sampleSeconds: num('sample', short ? 2 : 10, 1),
    retentionSeconds: num('retention', short ? 5 : 60, 1),
    json: values.get('json') ?? null,
  };
  values.delete('json');
  if (values.size > 0) throw new Error(`unknown option --${[...values.keys()][0]}`);
  return options;
}

interface Sample {
  t: number;
  rssMb: number;
  connections: number;
  /** spool.jobs_live. */
  jobsMb: number;
  /** spool.jobs_done: kept by the day (reported, not bounded). */
  doneMb: number;
  /** spool.job_history: kept a day past the longest window (reported, not bounded). */
  historyMb: number;
  dlqMb: number;
  /** spool.events: kept 7 days whatever the queues' retention, so it grows during a run (reported, not bounded). */
  eventsMb: number;
  counts: Record<string, number>;
  backlog: number;
  completed: number;
}

type Outcome = 'ok' | 'retry' | 'dead';

function pickOutcome(): Outcome {
  const r = Math.random();
  return r < 0.83 ? 'ok' : r < 0.95 ? 'retry' : 'dead';
}

const MB = 1024 * 1024;
/** DATABASE_POOL_MAX of the server (its default, set explicitly). */
const POOL_MAX = 20;

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

async function startServer(databaseUrl: string, retentionSweepMs: number, logFile: string): Promise<{ child: ChildProcess; url: string; apiKey: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./soak-server.ts', import.meta.url).pathname], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', GRPC_PORT: '0', LOG_LEVEL: 'warn', DATABASE_POOL_MAX: String(POOL_MAX), DEFAULT_PLAN: 'unlimited', SOAK_RETENTION_EVERY_MS: String(retentionSweepMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile);
  child.stderr!.pipe(log);
  return new Promise((resolve, reject) => {
    let buffer = '';
    let ready = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (ready) return void log.write(chunk);
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith('SOAK_READY '));
      if (line) {
        ready = true;
        const { url, apiKey } = JSON.parse(line.slice('SOAK_READY '.length)) as { url: string; apiKey: string };
        resolve({ child, url, apiKey });
      }
    });
    child.once('exit', (code) => {
      if (!ready) reject(new Error(`the Spool server exited with ${code} before it was ready; see ${logFile}`));
    });
  });
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const max = (xs: number[]) => Math.max(...xs);
const fmt = (n: number, digits = 1) => n.toFixed(digits);

interface Check {
  name: string;
  first: number;
  last: number;
  bound: number;
  ok: boolean;
}

/** The bounds in the header comment, on the samples after warm-up. */
function checkBounds(samples: Sample[], warmupSeconds: number, rate: number, serverErrors: number): { checks: Check[]; ok: boolean; reason: string | null } {
  const steady = samples.filter((s) => s.t >= warmupSeconds);
  if (steady.length < 6) return { checks: [], ok: false, reason: `only ${steady.length} samples after the ${warmupSeconds} s warm-up; run longer or sample more often` };
  const third = Math.floor(steady.length / 3);
  const a = steady.slice(0, third);
  const c = steady.slice(steady.length - third);
  const checks: Check[] = [];
  const meanCheck = (name: string, pick: (s: Sample) => number, factor: number, slack: number) => {
    const first = mean(a.map(pick));
    const last = mean(c.map(pick));
    const bound = factor * first + slack;
    checks.push({ name, first, last, bound, ok: last <= bound });
  };
  meanCheck('rss_mb', (s) => s.rssMb, 1.2, 16);
  // A pool still growing towards its size is not a leak: the bound is never below the configured size.
  const firstConns = max(a.map((s) => s.connections));
  const lastConns = max(c.map((s) => s.connections));
  const connBound = Math.max(firstConns + 2, POOL_MAX + 1);
  checks.push({ name: 'connections_max', first: firstConns, last: lastConns, bound: connBound, ok: lastConns <= connBound });
  meanCheck('jobs_mb', (s) => s.jobsMb, 1.25, 0.25);
  meanCheck('dlq_mb', (s) => s.dlqMb, 1.25, 0.25);
  meanCheck('backlog_jobs', (s) => s.backlog, 1.5, 2 * rate);
  const doneInC = c[c.length - 1]!.completed - c[0]!.completed;
  checks.push({ name: 'completed_in_last_third', first: a[a.length - 1]!.completed - a[0]!.completed, last: doneInC, bound: 1, ok: doneInC >= 1 });
  checks.push({ name: 'server_errors', first: 0, last: serverErrors, bound: 0, ok: serverErrors === 0 });
  return { checks, ok: checks.every((ch) => ch.ok), reason: null };
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const began = Date.now();
  // Short runs vacuum every second: with the default 60 s naptime a run of a
  // minute ends before deleted rows are ever reused, and sizes only grow.
  const settings: Record<string, string> = { max_connections: '100', ...(options.seconds < 120 ? { autovacuum_naptime: '1s' } : {}) };
  const scratch = await startScratchPostgres({ prefix: 'spool-soak-', embeddedOnly: true, settings });
  const tmp = scratch.dir!;
  const logFile = join(tmp, 'server.log');
  const say = (line: string) => process.stdout.write(`${line}\n`);
  say(`soak: ${fmt(options.seconds / 60)} min, ${options.rate} jobs/s, sample every ${options.sampleSeconds} s, retention ${options.retentionSeconds} s (data in ${tmp})`);
  let server: { child: ChildProcess; url: string; apiKey: string } | null = null;
  const monitor = new pg.Client({ connectionString: scratch.urlFor('spool'), application_name: 'spool-soak-monitor' });
  const workers: Worker<{ outcome: Outcome }>[] = [];
  const timers: NodeJS.Timeout[] = [];
  let code = 1;
  try {
    const sweepMs = Math.max(1_000, Math.min(10_000, (options.retentionSeconds * 1000) / 2));
    server = await startServer(await scratch.createDatabase('spool'), sweepMs, logFile);
    say(`soak: PostgreSQL and Spool ready in ${fmt((Date.now() - began) / 1000)} s`);
    await monitor.connect();
    const client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey, retry: { maxRetries: 5 } });
    let serverErrors = 0;
    let clientErrors = 0;
    const noteError = (err: unknown) => {
      if (err instanceof ServerError) serverErrors += 1;
      else clientErrors += 1;
    };

    const queues = ['soak-single', 'soak-bulk', 'soak-cron'];
    const days = options.retentionSeconds / 86_400;
    for (const queue of queues) {
      const res = await fetch(`${server.url}/api/v1/queues/${queue}/config`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          settings: { retention: { completed_days: days, failed_days: days, cancelled_days: days, deadletter_days: days } },
          backoff_base_ms: 200,
          backoff_max_ms: 2_000,
          backoff_jitter_ms: 100,
        }),
      });
      if (!res.ok) throw new Error(`queue config for ${queue}: ${res.status} ${await res.text()}`);
    }
    for (const name of ['soak-cron-a', 'soak-cron-b']) {
      await client.schedules.create({ name, cronExpression: '*/2 * * * * *', queueName: 'soak-cron', payloadTemplate: { outcome: 'ok' } });
    }

    let completed = 0;
    const attempts = new Map<string, number>();
    for (const queue of queues) {
      const worker = new Worker<{ outcome: Outcome }>(client, { queue, concurrency: 10, leaseSeconds: 30 });
      worker.on('error', noteError);
      worker.on('completed', () => (completed += 1));
      worker.handle(async (job) => {
        await sleep(5 + Math.random() * 20);
        const outcome = job.payload?.outcome ?? 'ok';
        if (outcome === 'dead') throw new NonRetryableError('soak: dead letter');
        if (outcome === 'retry' && !attempts.has(job.id)) {
          attempts.set(job.id, 1);
          throw new Error('soak: fails once');
        }
        attempts.delete(job.id);
        return { ok: true };
      });
      await worker.start();
      workers.push(worker);
    }

    // The load: one tick per second.
    let enqueued = 0;
    let cancelled = 0;
    let replayed = 0;
    let ticking = false;
    const tick = async () => {
      const singles = Math.max(1, Math.round(options.rate * 0.4));
      const bulk = Math.max(1, Math.round(options.rate * 0.5));
      const delayed = Math.max(2, Math.round(options.rate * 0.1));
      const created = await Promise.all([
        ...Array.from({ length: singles }, () => client.jobs.create({ queueName: 'soak-single', payload: { outcome: pickOutcome() }, maxRetries: 2 })),
      ]);
      enqueued += created.length;
      const result = await client.jobs.bulk({ queueName: 'soak-bulk', jobs: Array.from({ length: bulk }, () => ({ payload: { outcome: pickOutcome() }, maxRetries: 2 })) });
      enqueued += result.successCount;
      const later = await Promise.all(Array.from({ length: delayed }, () =>
        client.jobs.create({ queueName: 'soak-single', payload: { outcome: 'ok' as Outcome }, scheduledAt: new Date(Date.now() + 3_000) })));
      enqueued += later.length;
      // Half of the delayed jobs are cancelled before they are due.
      for (const job of later.slice(0, Math.floor(later.length / 2))) {
        await client.jobs.cancel(job.id);
        cancelled += 1;
      }
    };
    timers.push(setInterval(() => {
      if (ticking) return; // a slow tick is skipped, not piled up
      ticking = true;
      tick().catch(noteError).finally(() => (ticking = false));
    }, 1_000));
    timers.push(setInterval(() => {
      client.dlq.retry({ queueName: 'soak-bulk', limit: 10 }).then((r) => (replayed += r.retriedCount), noteError);
    }, 30_000));

    // Sampling.
    const samples: Sample[] = [];
    const started = Date.now();
    const pid = server.child.pid!;
    say('     t  rss_MB  conns  live_MB  done_MB  hist_MB  dlq_MB  evt_MB  pending  sched  proc  done  dead  canc  backlog  done/s');
    let lastCompleted = 0;
    let lastT = 0;
    const take = async () => {
      const t = (Date.now() - started) / 1000;
      const conns = await monitor.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      const sizes = await monitor.query<{ jobs: string; done: string; history: string; dlq: string; events: string }>(
        `SELECT pg_total_relation_size('spool.jobs_live') AS jobs,
                (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('spool.jobs_done')) AS done,
                pg_total_relation_size('spool.job_history') AS history, pg_total_relation_size('spool.dead_letter_queue') AS dlq,
                coalesce(pg_total_relation_size(to_regclass('spool.events')), 0) AS events`);
      const counts = await monitor.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM spool.jobs GROUP BY status');
      const byStatus = Object.fromEntries(counts.rows.map((r) => [r.status, r.n])) as Record<string, number>;
      const due = await monitor.query<{ n: number }>("SELECT count(*)::int AS n FROM spool.jobs WHERE status = 'processing' OR (status IN ('pending', 'scheduled') AND scheduled_at <= now())");
      const s: Sample = {
        t,
        rssMb: rssMb(pid),
        connections: conns.rows[0]!.n,
        jobsMb: Number(sizes.rows[0]!.jobs) / MB,
        doneMb: Number(sizes.rows[0]!.done) / MB,
        historyMb: Number(sizes.rows[0]!.history) / MB,
        dlqMb: Number(sizes.rows[0]!.dlq) / MB,
        eventsMb: Number(sizes.rows[0]!.events) / MB,
        counts: byStatus,
        backlog: due.rows[0]!.n,
        completed,
      };
      samples.push(s);
      const rate = (completed - lastCompleted) / Math.max(0.001, t - lastT);
      lastCompleted = completed;
      lastT = t;
      const c = (k: string) => String(byStatus[k] ?? 0);
      say([
        fmt(t, 0).padStart(6), fmt(s.rssMb).padStart(7), String(s.connections).padStart(6), fmt(s.jobsMb, 2).padStart(8), fmt(s.doneMb, 2).padStart(8), fmt(s.historyMb, 2).padStart(8),
        fmt(s.dlqMb, 2).padStart(7), fmt(s.eventsMb, 2).padStart(7), c('pending').padStart(8), c('scheduled').padStart(6), c('processing').padStart(5), c('completed').padStart(5),
        c('deadletter').padStart(5), c('cancelled').padStart(5), String(s.backlog).padStart(8), fmt(rate, 0).padStart(7),
      ].join(' '));
    };
    // Ctrl-C ends the run early but still cleans up (the embedded PostgreSQL runs in its own process group).
    const interrupt = new AbortController();
    const onSignal = () => interrupt.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    while (Date.now() - started < options.seconds * 1000 && !interrupt.signal.aborted) {
      await sleep(Math.min(options.sampleSeconds * 1000, options.seconds * 1000 - (Date.now() - started)), undefined, { signal: interrupt.signal }).catch(() => {});
      if (!interrupt.signal.aborted) await take();
    }
    if (interrupt.signal.aborted) say('soak: interrupted; checking the samples so far');

    for (const timer of timers) clearInterval(timer);
    await Promise.all(workers.map((w) => w.stop({ graceMs: 2_000 })));
    const warmup = Math.max(0.2 * options.seconds, options.retentionSeconds + (2 * sweepMs) / 1000);
    const verdict = checkBounds(samples, warmup, options.rate, serverErrors);
    say('');
    say(`bounds (after a ${fmt(warmup, 0)} s warm-up; first third → last third):`);
    for (const ch of verdict.checks) say(`  ${ch.ok ? 'ok  ' : 'FAIL'} ${ch.name.padEnd(24)} ${fmt(ch.first, 2).padStart(9)} → ${fmt(ch.last, 2).padStart(9)}  (bound ${fmt(ch.bound, 2)})`);
    if (verdict.reason) say(`  FAIL ${verdict.reason}`);
    const last = samples[samples.length - 1];
    say(`soak: minutes=${fmt((last?.t ?? 0) / 60)} enqueued=${enqueued} completed=${completed} cancelled=${cancelled} dlq_replayed=${replayed} server_errors=${serverErrors} client_errors=${clientErrors} rss_mb=${fmt(last?.rssMb ?? 0)} connections=${last?.connections ?? 0} ${verdict.ok ? 'bounded=yes' : 'bounded=NO'}`);
    if (options.json) writeFileSync(options.json, JSON.stringify({ options, samples, verdict, enqueued, completed, cancelled, replayed, serverErrors, clientErrors }, null, 2));
    code = verdict.ok ? 0 : 1;
    if (!verdict.ok) say(`server log (last lines):\n${readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n')}`);
  } finally {
    for (const timer of timers) clearInterval(timer);
    await Promise.all(workers.map((w) => w.stop({ graceMs: 0 }).catch(() => {})));
    await monitor.end().catch(() => {});
    if (server && server.child.exitCode === null) {
      const exited = new Promise((r) => server!.child.once('exit', r));
      server.child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
    await scratch.stop();
  }
  say(`soak: done in ${fmt((Date.now() - began) / 1000)} s`);
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`soak: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    process.exit(1);
  },
);
