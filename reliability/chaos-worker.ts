/**
 * One worker process of `npm run chaos`: an SDK Worker pointed at the
 * round-robin proxy, whose handler records each execution (job, lease,
 * worker, start and finish) in `chaos.effects` over its own connection to
 * the same PostgreSQL. The chaos run SIGKILLs this process at random; it
 * installs no clean-up on purpose. Configured by environment variables
 * (see chaos-run.ts), it prints one JSON line per notable event.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { SpoolClient, Worker } from '@spool/sdk';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const name = env('CHAOS_WORKER_NAME');
const say = (event: string, detail: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ worker: name, event, ...detail })}\n`);

// The effects pool outlives PostgreSQL restarts: broken idle connections are dropped, new ones made on demand.
const effects = new pg.Pool({ connectionString: env('CHAOS_DATABASE_URL'), max: 4, connectionTimeoutMillis: 2000, application_name: `chaos-${name}` });
effects.on('error', () => {});

/** Writes through a PostgreSQL restart: retries connection-level failures until `deadline`. */
async function write(sql: string, values: unknown[], deadline: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await effects.query(sql, values);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(Math.min(50 * 2 ** attempt, 1000));
    }
  }
}

interface Payload {
  i: number;
  workMs: number;
}

async function runWorker(): Promise<Worker<Payload>> {
  const client = new SpoolClient({ baseUrl: env('CHAOS_SPOOL_URL'), apiKey: env('CHAOS_API_KEY'), timeoutMs: 15_000 });
  const worker = new Worker<Payload>(client, {
    queue: env('CHAOS_QUEUE'),
    concurrency: Number(process.env.CHAOS_CONCURRENCY ?? 10),
    leaseSeconds: Number(process.env.CHAOS_LEASE_SECONDS ?? 5),
    waitMs: 2000,
    pollIntervalMs: 200,
    hostname: name,
  });
  worker.handle(async (job, ctx) => {
    // One row per execution; its own id makes a retried write after a lost answer harmless.
    const execution = randomUUID();
    const deadline = Date.now() + 60_000;
    await write('INSERT INTO chaos.effects (id, job_id, lease_id, worker, started_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING', [execution, job.id, ctx.leaseId, name, new Date()], deadline);
    await sleep(job.payload.workMs);
    await write('UPDATE chaos.effects SET finished_at = $2 WHERE id = $1', [execution, new Date()], deadline);
    return { i: job.payload.i };
  });
  let lastError = 0;
  worker.on('error', (err) => {
    // Errors are expected while servers and PostgreSQL restart; one line a second is enough to follow them.
    if (Date.now() - lastError < 1000) return;
    lastError = Date.now();
    say('error', { message: err instanceof Error ? err.message : String(err) });
  });
  await worker.start();
  return worker;
}

// Registration needs a server and PostgreSQL: keep trying while they restart.
for (let attempt = 1; ; attempt++) {
  try {
    const worker = await runWorker();
    say('started', { workerId: worker.workerId, attempts: attempt });
    break;
  } catch (err) {
    if (attempt % 5 === 1) say('start-failed', { attempt, message: err instanceof Error ? err.message : String(err) });
    await sleep(Math.min(200 * attempt, 2000));
  }
}
