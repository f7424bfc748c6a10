/**
 * `npm run fuzz [-- --runs N] [--seed S] [--concurrency C] [--shrink]`: generated requests
 * against every route of a real Spool (its own embedded PostgreSQL, or a
 * throwaway database on DATABASE_URL), then the database consistency query.
 * Prints the seed first: `--seed S` replays the same request sequence
 * (with `--concurrency C`, batches of C requests race each other).
 * Exits 1 on any 5xx, contract violation, hang, crash or inconsistency.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { organizationCreate } from '@spool/engine';
import { loadConfig, startSpool } from '@spool/server';
import { startScratchPostgres, type ScratchPostgres } from '../test-support/scratch-postgres.js';
import { runGrpcFuzz } from './fuzz/grpc.js';
import { formatReport, runFuzz } from './fuzz/run.js';

function option(name: string): string | undefined {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  if (at >= 0) return args[at + 1];
  return args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
}

function intOption(name: string, fallback: number): number {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new Error(`--${name} must be an integer (got "${raw}")`);
  return value;
}

async function main(): Promise<number> {
  const runs = intOption('runs', 5000);
  const seed = intOption('seed', randomBytes(4).readInt32LE());
  const concurrency = intOption('concurrency', 1);
  const shrink = process.argv.includes('--shrink');
  console.log(`fuzz: seed=${seed} runs=${runs} concurrency=${concurrency} (replay: npm run fuzz -- --runs ${runs} --seed ${seed}${concurrency > 1 ? ` --concurrency ${concurrency}` : ''})`);

  let scratch: ScratchPostgres | null = null;
  let stopSpool: (() => Promise<void>) | null = null;
  // Ctrl-C mid-run: stop the server and the embedded PostgreSQL rather than orphan them.
  const interrupted = (signal: string) => {
    console.log(`fuzz: ${signal}: stopping`);
    void (async () => {
      await stopSpool?.().catch(() => {});
      await scratch?.stop();
      process.exit(130);
    })();
  };
  process.once('SIGINT', () => interrupted('SIGINT'));
  process.once('SIGTERM', () => interrupted('SIGTERM'));
  scratch = await startScratchPostgres({ prefix: 'spool-fuzz-', settings: { fsync: 'off', synchronous_commit: 'off' } });
  const url = await scratch.createDatabase(`spool_fuzz_${randomBytes(4).toString('hex')}`);

  // Error-level lines are kept to show beside the request that caused them.
  const errorLogs: string[] = [];
  const sink = new Writable({ write(chunk, _enc, done) { errorLogs.push(String(chunk).trim()); done(); } });
  const logger = pino({ level: 'error' }, sink);
  const secrets = { adminKey: `admin-${randomBytes(8).toString('hex')}`, githubSecret: randomBytes(16).toString('hex'), stripeSecret: randomBytes(16).toString('hex') };
  const config = {
    ...loadConfig({}),
    databaseUrl: url,
    host: '127.0.0.1',
    port: 0,
    grpcPort: 0,
    adminApiKey: secrets.adminKey,
    githubWebhookSecret: secrets.githubSecret,
    stripeWebhookSecret: secrets.stripeSecret,
    secretsKey: randomBytes(32),
    defaultPlan: 'unlimited' as const,
    publicRateLimitPerMinute: 0,
  };
  const spool = await startSpool(config, { logger, announce: () => {} });
  stopSpool = () => spool.stop();
  let code = 1;
  try {
    const org = await organizationCreate(spool.db, { name: 'fuzz', slug: `fuzz-${randomBytes(3).toString('hex')}`, planTier: 'unlimited', environment: 'development' });
    let lastPrinted = 0;
    const report = await runFuzz(
      { url: spool.url, routes: spool.routes, db: spool.db, apiKey: org.apiKey.key, organizationId: org.organization.id, ...secrets, errorLogs: () => errorLogs },
      {
        runs,
        seed,
        concurrency,
        shrink,
        progress: (done, total) => {
          if (Date.now() - lastPrinted < 10_000 && done !== total) return;
          lastPrinted = Date.now();
          console.log(`fuzz: ${done}/${total}`);
        },
      },
    );
    console.log(formatReport(report, 20, true));
    const ids = (await spool.db.query<{ id: string }>('SELECT id::text FROM spool.jobs WHERE organization_id = $1 LIMIT 200', [org.organization.id])).rows.map((r) => r.id);
    const grpcRuns = Math.max(50, Math.ceil(runs / 10));
    const grpcReport = await runGrpcFuzz(`127.0.0.1:${spool.grpcPort}`, org.apiKey.key, () => ids, { runs: grpcRuns, seed });
    console.log(`fuzz grpc: seed=${seed} runs=${grpcReport.runs} methods=${grpcReport.methods} failures=${grpcReport.failures.length}`);
    console.log(`grpc codes: ${Object.entries(grpcReport.codes).sort().map(([c, n]) => `${c}=${n}`).join(' ')}`);
    for (const failure of grpcReport.failures.slice(0, 20)) console.log(`  grpc: ${failure}`);
    code = report.failures.length + report.inconsistencies.length + report.processErrors.length + grpcReport.failures.length === 0 ? 0 : 1;
  } finally {
    await spool.stop();
    await scratch.stop();
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
