/**
 * An interleaved A/B of the S3 drain whose two variants differ only by the
 * server's environment:
 *
 *   node --import tsx bench/ab-drain.ts --a STATS_ROLLUP=on --b STATS_ROLLUP=off --rounds 6 --jobs 20000
 *
 * Each round starts a server with its variant's variables on a fresh
 * database of one embedded PostgreSQL cluster, loads `--jobs` jobs through
 * /jobs/bulk and drains them with one SDK worker process over HTTP, as S3 and
 * bench/drain-profile.ts do, measuring jobs/s and the CPU of PostgreSQL, the
 * server and the worker from /proc (bench/lib/role-cpu.ts). Rounds alternate
 * A B B A A B B A …, so a drift of the machine's load falls on both variants
 * alike; `--warmup` rounds of A before them are not counted. The CPU is
 * counted from the drain's start until `--settle` seconds (default 6) after
 * its end, in both variants: work that trails the jobs (the rollup's next
 * pass within 5 s, the span exporter's batch within 5 s) belongs to them.
 * jobs/s is the drain's alone. Without `--b`
 * (or with the same variables) it is an A/A run: the noise floor.
 *
 * `--a`/`--b` take NAME=value and may repeat; `--a` alone with nothing is the
 * server's defaults. OTEL_EXPORTER_OTLP_ENDPOINT=local points the server at
 * an OTLP/HTTP receiver inside this process that accepts and discards what it
 * gets (its request and byte counts are reported). `--json <file>` also
 * writes every round.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { cpuDuring } from './lib/role-cpu.js';
import { summarize } from './lib/stats.js';
import { SpoolSystem } from './systems/spool.js';

interface Args {
  a: Record<string, string>;
  b: Record<string, string>;
  rounds: number;
  jobs: number;
  warmup: number;
  settle: number;
  json: string | null;
}

function usage(message: string): never {
  console.error(`ab-drain: ${message}\nusage: node --import tsx bench/ab-drain.ts --a NAME=value [--a …] [--b NAME=value …] [--rounds 6] [--jobs 20000] [--warmup 1] [--settle 6] [--json file]`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const args: Args = { a: {}, b: {}, rounds: 6, jobs: 20_000, warmup: 1, settle: 6, json: null };
  let sawB = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (value === undefined) usage(`${flag} needs a value`);
    i++;
    if (flag === '--a' || flag === '--b') {
      if (value === '') continue;
      const eq = value.indexOf('=');
      if (eq < 1) usage(`${flag} takes NAME=value (got "${value}")`);
      (flag === '--a' ? args.a : args.b)[value.slice(0, eq)] = value.slice(eq + 1);
      if (flag === '--b') sawB = true;
    } else if (flag === '--rounds' || flag === '--jobs' || flag === '--warmup' || flag === '--settle') {
      const n = Number(value);
      const min = flag === '--warmup' || flag === '--settle' ? 0 : flag === '--rounds' ? 2 : 100;
      if (!Number.isInteger(n) || n < min) usage(`${flag} must be an integer of at least ${min} (got "${value}")`);
      args[flag.slice(2) as 'rounds' | 'jobs' | 'warmup' | 'settle'] = n;
    } else if (flag === '--json') {
      args.json = value;
    } else {
      usage(`unknown option ${flag}`);
    }
  }
  if (!sawB) args.b = { ...args.a };
  if (args.rounds % 2 !== 0) usage('--rounds must be even (each pair of rounds holds one A and one B)');
  return args;
}

/** An OTLP/HTTP receiver that answers every export 200 and keeps nothing but counts. */
async function startSink(): Promise<{ url: string; requests: number; bytes: number; close(): Promise<void> }> {
  const sink = { url: '', requests: 0, bytes: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      sink.bytes += chunk.length;
    });
    req.on('end', () => {
      sink.requests += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  sink.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  sink.close = () => new Promise((resolve) => server.close(() => resolve()));
  return sink;
}

type Variant = 'A' | 'B';
interface Round {
  variant: Variant;
  jobsPerS: number;
  wallS: number;
  /** CPU seconds per 1,000 jobs by role. */
  cpuPer1000: Record<'postgres' | 'server' | 'worker' | 'harness' | 'total', number>;
  /** What the local OTLP receiver got during the drain. */
  otlp?: { requests: number; bytes: number };
}

/** A B B A A B B A …: every consecutive pair holds one of each. */
function order(rounds: number): Variant[] {
  return Array.from({ length: rounds }, (_, i) => (((i + 1) >> 1) % 2 === 0 ? 'A' : 'B'));
}

const describeEnv = (env: Record<string, string>) => Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ') || '(server defaults)';

const args = parseArgs(process.argv.slice(2));
const same = describeEnv(args.a) === describeEnv(args.b);
const needsSink = [args.a, args.b].some((env) => env.OTEL_EXPORTER_OTLP_ENDPOINT === 'local');
const sink = needsSink ? await startSink() : null;
const resolveEnv = (env: Record<string, string>) => (env.OTEL_EXPORTER_OTLP_ENDPOINT === 'local' ? { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url } : env);

const scratch = await startScratchPostgres({ prefix: 'spool-ab-drain-', embeddedOnly: true });
const rounds: Round[] = [];
const plan: { variant: Variant; counted: boolean }[] = [
  ...Array.from({ length: args.warmup }, () => ({ variant: 'A' as Variant, counted: false })),
  ...order(args.rounds).map((variant) => ({ variant, counted: true })),
];
const startedAt = Date.now();
try {
  console.error(`[ab-drain] A: ${describeEnv(args.a)}; B: ${describeEnv(args.b)}${same ? ' (A/A: the noise floor)' : ''}; ${args.rounds} rounds of ${args.jobs} jobs after ${args.warmup} warm-up`);
  for (const [index, step] of plan.entries()) {
    const database = `ab_${index}`;
    const sys = new SpoolSystem(await scratch.createDatabase(database), 'http', resolveEnv(step.variant === 'A' ? args.a : args.b));
    try {
      await sys.setup();
      await sys.preload(args.jobs, 1000, 'api');
      const before = sink ? { requests: sink.requests, bytes: sink.bytes } : null;
      const started = performance.now();
      let wallS = 0;
      const { result: rate, cpu } = await cpuDuring(async () => {
        const drained = await sys.drain(args.jobs, 1);
        wallS = (performance.now() - started) / 1000;
        await new Promise((resolve) => setTimeout(resolve, args.settle * 1000));
        return drained;
      });
      const per = (role: string) => (cpu.get(role as never) ?? 0) / (args.jobs / 1000);
      const round: Round = {
        variant: step.variant,
        jobsPerS: rate,
        wallS,
        cpuPer1000: { postgres: per('postgres'), server: per('server'), worker: per('worker'), harness: per('harness'), total: per('postgres') + per('server') + per('worker') },
        ...(before && sink ? { otlp: { requests: sink.requests - before.requests, bytes: sink.bytes - before.bytes } } : {}),
      };
      const c = round.cpuPer1000;
      console.error(`[ab-drain] ${step.counted ? `round ${rounds.length + 1}` : 'warm-up'} ${step.variant}: ${Math.round(rate)} jobs/s, wall ${wallS.toFixed(1)} s; CPU s per 1,000 jobs: postgres ${c.postgres.toFixed(3)}, server ${c.server.toFixed(3)}, worker ${c.worker.toFixed(3)}${round.otlp ? `; OTLP ${round.otlp.requests} requests, ${Math.round(round.otlp.bytes / 1024)} kB` : ''}`);
      if (step.counted) rounds.push(round);
    } finally {
      await sys.teardown();
      await scratch.dropDatabase(database);
    }
  }
} finally {
  await scratch.stop();
  await sink?.close();
}

// The report: medians with min–max per variant, B/A of the medians, and the
// range of B/A over the rounds' pairs (each pair one A and one B, run back to back).
const metrics: { name: string; pick: (r: Round) => number; digits: number }[] = [
  { name: 'jobs/s', pick: (r) => r.jobsPerS, digits: 0 },
  { name: 'PostgreSQL CPU s / 1,000 jobs', pick: (r) => r.cpuPer1000.postgres, digits: 3 },
  { name: 'server CPU s / 1,000 jobs', pick: (r) => r.cpuPer1000.server, digits: 3 },
  { name: 'worker CPU s / 1,000 jobs', pick: (r) => r.cpuPer1000.worker, digits: 3 },
  { name: 'all three, CPU s / 1,000 jobs', pick: (r) => r.cpuPer1000.total, digits: 3 },
];
const fmt = (v: number, digits: number) => v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const cell = (values: number[], digits: number) => {
  const s = summarize(values);
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
};
const pairs: [Round, Round][] = [];
for (let i = 0; i + 1 < rounds.length; i += 2) {
  const [x, y] = [rounds[i]!, rounds[i + 1]!];
  pairs.push(x.variant === 'A' ? [x, y] : [y, x]);
}
const lines = [
  `A: \`${describeEnv(args.a)}\`; B: \`${describeEnv(args.b)}\`${same ? ' (A/A)' : ''}. ${args.rounds} rounds of ${args.jobs.toLocaleString('en-US')} jobs (A B B A …, after ${args.warmup} warm-up; CPU until ${args.settle} s after each drain), ${Math.round((Date.now() - startedAt) / 1000)} s.`,
  '',
  '| metric | A: median (min–max) | B: median (min–max) | B/A of medians | B/A per pair (min–max) |',
  '| --- | --- | --- | --- | --- |',
];
for (const m of metrics) {
  const a = rounds.filter((r) => r.variant === 'A').map(m.pick);
  const b = rounds.filter((r) => r.variant === 'B').map(m.pick);
  const ratios = pairs.map(([ra, rb]) => m.pick(rb) / m.pick(ra));
  const pr = summarize(ratios);
  lines.push(`| ${m.name} | ${cell(a, m.digits)} | ${cell(b, m.digits)} | ${(summarize(b).median / summarize(a).median).toFixed(3)} | ${pr.min.toFixed(3)}–${pr.max.toFixed(3)} |`);
}
const exported = rounds.filter((r) => r.otlp && r.otlp.requests > 0);
if (exported.length > 0) {
  const per = exported.map((r) => r.otlp!.bytes / 1024 / (args.jobs / 1000));
  lines.push('', `The local OTLP receiver took ${exported.map((r) => r.otlp!.requests).join(', ')} export requests in the traced rounds' drains (median ${fmt(summarize(per).median, 1)} kB of spans per 1,000 jobs).`);
}
console.log(lines.join('\n'));
if (args.json) writeFileSync(args.json, JSON.stringify({ a: args.a, b: args.b, jobs: args.jobs, rounds }, null, 2) + '\n');
