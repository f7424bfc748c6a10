/**
 * `npm run bench -- --flow [--quick]`: what Spool's flow control holds and
 * costs, measured from outside as the other scenarios are (the server in
 * its own process, worker processes over HTTP, bench/systems/spool.ts).
 *
 * F1, rate limit: a queue with `rate_limit` R holds a backlog of 12 s worth
 * of jobs, and four worker processes (each with several long-polling claim
 * loops) drain it as fast as the limit lets them. From the jobs' start
 * times: the rate held, and the most starts in any 1-second and 5-second
 * window, as a ratio to what the rate allows in that window (the goal is
 * ≤ 1.1 over any 5-second window).
 *
 * F2, concurrency keys: the same drain (S3's shape: one worker process) of
 * a queue whose jobs all carry distinct concurrency keys under a
 * concurrency_key_limit of 1, against the queue without keys or limit,
 * alternated in the same run; the goal is ≥ 0.8×.
 *
 * F3, fair share: the same alternated drain with every job carrying one of
 * 100 fairness keys on a round-robin queue, against the plain queue (goal
 * ≥ 0.8×); and, claimed 10 at a time, how many jobs go out before the last
 * of 10 jobs of one key enqueued after 100,000 of another (goal ≤ 200).
 *
 * Writes bench/results/flow.json and bench/results/flow.md (copied into
 * BENCHMARKS.md, "Flow control"). `--scenarios F2` (or F1, F3, comma
 * separated) runs only those and writes only their numbers, to
 * bench/results/flow-F2.json: for A/B runs of one part on a noisy machine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { jobClaim, jobInsertMany, queueConfigUpsert } from '@spool/engine';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { SpoolSystem } from './systems/spool.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const scenariosAt = argv.indexOf('--scenarios');
const parts = scenariosAt >= 0 ? (argv[scenariosAt + 1] ?? '').split(',').map((x) => x.trim().toUpperCase()).filter(Boolean) : null;
if (parts && (parts.length === 0 || parts.some((x) => !['F1', 'F2', 'F3'].includes(x)))) throw new Error(`--scenarios takes F1, F2 and F3 (comma separated), not ${argv[scenariosAt + 1]}`);
const wanted = (part: string) => !parts || parts.includes(part);
const QUEUE = 'bench';
const WORKERS = 4;

interface RateResult {
  rate: number;
  burst: number;
  jobs: number;
  seconds: number;
  heldPerS: number;
  max1sRatio: number;
  max5sRatio: number;
}

/** The most of the sorted times `t` (ms) within any window of `windowMs`. */
function maxInWindow(t: number[], windowMs: number): number {
  let best = 0;
  let from = 0;
  for (let to = 0; to < t.length; to++) {
    while (t[to]! - t[from]! >= windowMs) from++;
    best = Math.max(best, to - from + 1);
  }
  return best;
}

async function rateLimit(sys: SpoolSystem, rate: number): Promise<RateResult> {
  await sys.reset();
  const row = await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { rateLimit: rate, rateLimitBurst: null });
  const burst = (await sys.db.query<{ burst: number }>('SELECT spool.rate_burst($1, $2) AS burst', [row.rate_limit, row.rate_limit_burst])).rows[0]!.burst;
  const jobs = rate * 12;
  await sys.preload(jobs, 1000);
  // The bucket fills while the backlog loads; drain from an empty one so the
  // windows measure the rate, and report the burst separately.
  await sys.db.query('UPDATE spool.queue_config SET rate_tokens = 0, rate_refilled_at = clock_timestamp() WHERE organization_id = $1 AND queue_name = $2', [sys.organizationId, QUEUE]);
  await sys.drain(jobs, WORKERS);
  const started = await sys.db.query<{ t: number }>(
    `SELECT (extract(epoch FROM started_at) * 1000)::float8 AS t FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 ORDER BY started_at`,
    [sys.organizationId, QUEUE]);
  const t = started.rows.map((r) => r.t);
  const seconds = (t[t.length - 1]! - t[0]!) / 1000;
  await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { rateLimit: null });
  return {
    rate,
    burst,
    jobs: t.length,
    seconds,
    heldPerS: t.length / seconds,
    max1sRatio: maxInWindow(t, 1000) / rate,
    max5sRatio: maxInWindow(t, 5000) / (5 * rate),
  };
}

interface KeyedResult {
  jobs: number;
  plainPerS: number[];
  keyedPerS: number[];
  ratio: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type DrainMode = 'plain' | 'keyed' | 'fair';

/** Alternated drains of `jobs` by one worker process: the plain queue against `mode`. */
async function comparedDrain(sys: SpoolSystem, jobs: number, reps: number, mode: Exclude<DrainMode, 'plain'>): Promise<KeyedResult> {
  const plainPerS: number[] = [];
  const keyedPerS: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const m of ['plain', mode] as const) {
      await sys.reset();
      await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { concurrencyKeyLimit: m === 'keyed' ? 1 : null, fairness: m === 'fair' ? 'round_robin' : null });
      for (let offset = 0; offset < jobs; offset += 1000) {
        await jobInsertMany(sys.db, Array.from({ length: Math.min(1000, jobs - offset) }, (_, k) => ({
          organizationId: sys.organizationId, queueName: QUEUE, payload: { i: offset + k },
          concurrencyKey: m === 'keyed' ? `key-${offset + k}` : null,
          fairnessKey: m === 'fair' ? `tenant-${(offset + k) % 100}` : null,
        })));
      }
      const perS = await sys.drain(jobs, 1);
      (m === 'plain' ? plainPerS : keyedPerS).push(perS);
      console.error(`[flow]   ${m}: ${perS.toFixed(0)} jobs/s`);
    }
  }
  await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { concurrencyKeyLimit: null, fairness: null });
  return { jobs, plainPerS, keyedPerS, ratio: median(keyedPerS) / median(plainPerS) };
}

/** Jobs claimed, 10 at a time, until the last of 10 jobs of a key enqueued after `ahead` of another. */
async function starvation(sys: SpoolSystem, ahead: number): Promise<number> {
  await sys.reset();
  await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { fairness: 'round_robin' });
  for (let offset = 0; offset < ahead; offset += 1000) {
    await jobInsertMany(sys.db, Array.from({ length: Math.min(1000, ahead - offset) }, (_, k) => ({ organizationId: sys.organizationId, queueName: QUEUE, payload: { i: offset + k }, fairnessKey: 'big' })));
  }
  await jobInsertMany(sys.db, Array.from({ length: 10 }, (_, k) => ({ organizationId: sys.organizationId, queueName: QUEUE, payload: { k }, fairnessKey: 'small' })));
  await sys.db.query('ANALYZE spool.jobs');
  let claimed = 0;
  let small = 0;
  while (small < 10) {
    const jobs = await jobClaim(sys.db, { organizationId: sys.organizationId, queueName: QUEUE, workerId: 'bench', limit: 10, leaseSeconds: 300 });
    if (jobs.length === 0) throw new Error('the queue ran dry before the small key\'s jobs were claimed');
    claimed += jobs.length;
    small += jobs.filter((job) => job.fairness_key === 'small').length;
  }
  await queueConfigUpsert(sys.db, sys.organizationId, QUEUE, { fairness: null });
  return claimed;
}

function render(results: RateResult[], keyed: KeyedResult, fair: KeyedResult, starved: { ahead: number; claimed: number }, context: { command: string; startedAt: Date; load: string }): string {
  const out = [
    '## Flow control',
    '',
    'Spool only: what its flow control holds. The rates held are the limits\', not the machine\'s (the machine drains faster, S3).',
    '',
    `From \`${context.command}\` (${context.startedAt.toISOString().slice(0, 10)}, load average at start ${context.load}). ` +
      `F1: a backlog of 12 s worth of jobs on a queue with \`rate_limit\` R (default burst, R/10), drained by ${WORKERS} worker processes over HTTP ` +
      '(each several long-polling claim loops, as in S3) as fast as the limit allows; the start times come from the jobs. ' +
      'A ratio is the most jobs started in any window of that length over what the rate allows in it; the goal is ≤ 1.10 over 5 s. ' +
      'A job\'s start time is its claim transaction\'s start, which comes before that claim\'s wait for the queue\'s config row (claims of a ' +
      'rate-limited queue take turns on it), so on a busy machine short windows look denser than the bucket let them be.',
    '',
    '| rate_limit (jobs/s) | burst | jobs | drained in (s) | held (jobs/s) | max 1 s window ÷ rate | max 5 s window ÷ 5 × rate |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of results) {
    out.push(`| ${r.rate} | ${r.burst} | ${r.jobs} | ${r.seconds.toFixed(1)} | ${r.heldPerS.toFixed(1)} | ${r.max1sRatio.toFixed(3)} | ${r.max5sRatio.toFixed(3)} |`);
  }
  const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
  out.push('',
    `F2: a drain of ${keyed.jobs} jobs by one worker process, as S3: every job with its own \`concurrency_key\` and the queue's \`concurrency_key_limit\` 1, ` +
      'against the same queue without keys or limit, alternated in the same run (goal ≥ 0.80×). A keyed queue\'s claims take turns on its config row, ' +
      'each one statement that locks it, counts the keys\' running jobs and claims; the unkeyed drain uses the lock-free claim.',
    '',
    '| drain | jobs/s (median) | runs |',
    '| --- | --- | --- |',
    `| no keys | ${median(keyed.plainPerS).toFixed(0)} | ${list(keyed.plainPerS)} |`,
    `| distinct keys, limit 1 | ${median(keyed.keyedPerS).toFixed(0)} | ${list(keyed.keyedPerS)} |`,
    `| ratio | ${keyed.ratio.toFixed(2)}× | |`,
    '',
    `F3: the same alternated drain with every job carrying one of 100 \`fairness_key\` values on a queue with \`fairness: "round_robin"\` (goal ≥ 0.80×); ` +
      `then ${starved.ahead.toLocaleString('en-US')} jobs of one key followed by 10 of another, claimed 10 at a time in process: ` +
      `the last of the 10 went out with job ${starved.claimed} (goal ≤ 200; oldest first it would be ${(starved.ahead + 10).toLocaleString('en-US')}).`,
    '',
    '| drain | jobs/s (median) | runs |',
    '| --- | --- | --- |',
    `| no keys | ${median(fair.plainPerS).toFixed(0)} | ${list(fair.plainPerS)} |`,
    `| 100 fairness keys, round robin | ${median(fair.keyedPerS).toFixed(0)} | ${list(fair.keyedPerS)} |`,
    `| ratio | ${fair.ratio.toFixed(2)}× | |`);
  return out.join('\n');
}

export async function runFlow(): Promise<void> {
  const startedAt = new Date();
  const load = loadavg().map((l) => l.toFixed(2)).join(' ');
  const scratch = await startScratchPostgres({ prefix: 'spool-flow-pg-', embeddedOnly: true });
  await scratch.createDatabase('bench_flow');
  const sys = new SpoolSystem(scratch.urlFor('bench_flow'));
  try {
    await sys.setup();
    const rates = quick ? [50, 200] : [10, 100, 1000];
    const results: RateResult[] = [];
    for (const rate of wanted('F1') ? rates : []) {
      console.error(`[flow] F1 rate_limit ${rate}/s`);
      const r = await rateLimit(sys, rate);
      console.error(`[flow]   held ${r.heldPerS.toFixed(1)}/s over ${r.seconds.toFixed(1)} s; max 1 s ${r.max1sRatio.toFixed(3)}×, max 5 s ${r.max5sRatio.toFixed(3)}×`);
      results.push(r);
    }
    let keyed: KeyedResult | null = null;
    if (wanted('F2')) {
      console.error('[flow] F2 concurrency keys');
      keyed = await comparedDrain(sys, quick ? 3_000 : 20_000, quick ? 1 : 3, 'keyed');
      console.error(`[flow]   keyed ÷ plain ${keyed.ratio.toFixed(2)}×`);
    }
    let fair: KeyedResult | null = null;
    let starved: { ahead: number; claimed: number } | null = null;
    if (wanted('F3')) {
      console.error('[flow] F3 fair share');
      fair = await comparedDrain(sys, quick ? 3_000 : 20_000, quick ? 1 : 3, 'fair');
      console.error(`[flow]   fair ÷ plain ${fair.ratio.toFixed(2)}×`);
      const ahead = quick ? 10_000 : 100_000;
      starved = { ahead, claimed: await starvation(sys, ahead) };
      console.error(`[flow]   10 jobs behind ${ahead}: all claimed within ${starved.claimed}`);
    }
    const out = new URL('./results/', import.meta.url);
    mkdirSync(out, { recursive: true });
    const json = JSON.stringify({ startedAt, quick, load, parts, results, keyed, fair, starved }, null, 2) + '\n';
    if (parts) {
      const name = `flow-${parts.join('-')}.json`;
      writeFileSync(new URL(name, out), json);
      console.error(`[flow] wrote bench/results/${name}`);
    } else {
      writeFileSync(new URL('flow.json', out), json);
      writeFileSync(new URL('flow.md', out), render(results, keyed!, fair!, starved!, { command: `npm run bench -- ${argv.join(' ')}`, startedAt, load }) + '\n');
      console.error('[flow] wrote bench/results/flow.json and bench/results/flow.md');
    }
  } finally {
    await sys.teardown().catch((err) => console.error('[flow] teardown', err));
    await scratch.stop();
  }
}
