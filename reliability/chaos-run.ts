/**
 * The chaos run behind `npm run chaos` and its fast variant in `npm test`:
 * its own embedded PostgreSQL (so that it can stop and restart it), three
 * Spool replicas behind a round-robin proxy, and SDK worker processes whose
 * handler records every execution. While the jobs run it SIGKILLs and
 * restarts workers and replicas and restarts PostgreSQL; then it checks
 * from the database that every job completed once its lease history allows
 * (chaos-check.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool, migrate, organizationCreate, type Db } from '@spool/engine';
import { SpoolClient } from '@spool/sdk';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../packages/server/src/embedded-postgres.js';
import { startReplica, type Replica } from '../test-support/replica.js';
import { checkChaos, type ChaosVerdict, type CheckedJob, type Effect, type HistoryEvent } from './chaos-check.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './round-robin-proxy.js';

const ROOT = new URL('../', import.meta.url).pathname;
const QUEUE = 'chaos';

export type Fault = 'worker' | 'server' | 'postgres';

export interface ChaosOptions {
  jobs: number;
  servers: number;
  workers: number;
  /** Jobs each worker process runs at once. */
  concurrency: number;
  /** Lease per claim: how soon the job of a killed worker runs again. */
  leaseSeconds: number;
  /** Give up waiting for completion after this long (the verdict then reports the lost jobs). */
  timeoutSeconds: number;
  /** Pause between two faults, drawn uniformly from [min, max] ms. */
  faultEveryMs: [number, number];
  /** These faults happen first, in order; after them faults are drawn at random. */
  firstFaults: Fault[];
  /** PostgreSQL stays down this long, drawn from [min, max] ms. */
  postgresDownMs: [number, number];
  /** Fewest ms between two PostgreSQL restarts. */
  postgresEveryMs: number;
  /** Handler work per job, drawn from [0, max] ms. */
  workMaxMs: number;
  progressEveryMs: number;
  /** Keep the temporary directory (database and logs) for a look inside. */
  keep: boolean;
  log: (line: string) => void;
  /** Ends the run early (Ctrl-C): faults stop, everything is checked and cleaned up as usual. */
  signal?: AbortSignal;
}

export const DEFAULT_CHAOS_OPTIONS: ChaosOptions = {
  jobs: 20_000,
  servers: 3,
  workers: 4,
  concurrency: 10,
  leaseSeconds: 5,
  timeoutSeconds: 1800,
  faultEveryMs: [2000, 5000],
  firstFaults: ['worker', 'server', 'postgres'],
  postgresDownMs: [1000, 3000],
  postgresEveryMs: 15_000,
  workMaxMs: 20,
  progressEveryMs: 2000,
  keep: false,
  log: (line) => console.error(line),
};

export interface ChaosResult extends ChaosVerdict {
  /** Faults done: SIGKILLed workers and servers, PostgreSQL stops. */
  faults: Record<Fault, number>;
  restarts: { workers: number; servers: number; postgres: number; total: number };
  durationMs: number;
  /** Whether every job completed before the timeout (or an interrupt). */
  drained: boolean;
  /** How long the jobs took to complete, from the first enqueue (until the end of the run when they did not). */
  drainMs: number;
  proxy: RoundRobinProxy['stats'];
  /** The closing line: `chaos: jobs=N completed=N lost=0 live_overlap=0 reexecuted_after_expiry=K restarts=R`. */
  line: string;
}

const between = ([min, max]: [number, number]) => min + Math.random() * (max - min);
const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

interface WorkerProcess {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
}

interface ServerSlot {
  index: number;
  replica: Replica | null;
  generation: number;
}

export async function runChaos(overrides: Partial<ChaosOptions> = {}): Promise<ChaosResult> {
  const options: ChaosOptions = { ...DEFAULT_CHAOS_OPTIONS, ...overrides };
  const { log } = options;
  const began = Date.now();
  const elapsed = () => `${((Date.now() - began) / 1000).toFixed(1)}s`;
  const dir = mkdtempSync(join(tmpdir(), 'spool-chaos-'));
  // PostgreSQL runs as its own user when we are root: it must be able to reach its data directory inside.
  chmodSync(dir, 0o711);
  const logDir = join(dir, 'logs');
  mkdirSync(logDir);
  const logs: WriteStream[] = [];
  const logFile = (name: string) => {
    const stream = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
    logs.push(stream);
    return stream;
  };
  const restarts = { workers: 0, servers: 0, postgres: 0 };

  // PostgreSQL: its own cluster in the temporary directory. Restarted by
  // starting it again on the same directory, which keeps its port and password.
  const pgDir = join(dir, 'pg');
  const pgSettings = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' };
  const pgLog = (m: string) => log(`[chaos ${elapsed()}] postgres: ${m}`);
  let postgres: EmbeddedPostgres | null = await startEmbeddedPostgres({ dataDir: pgDir, settings: pgSettings, log: pgLog }).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const databaseUrl = postgres.url;
  const pgPort = postgres.port;
  log(`[chaos ${elapsed()}] PostgreSQL on port ${pgPort} (data and logs in ${dir})`);

  const db: Db = createPool({ connectionString: databaseUrl, max: 4, applicationName: 'chaos-controller' });
  const proxy = await startRoundRobinProxy();
  const slots: ServerSlot[] = Array.from({ length: options.servers }, (_, index) => ({ index, replica: null, generation: 0 }));
  const workers = new Map<string, WorkerProcess>();
  let workerSerial = 0;
  let stopping = false;
  // Aborted at the end: replicas still starting are killed instead of waited for.
  const stopStarting = new AbortController();
  const pendingRestarts = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    pendingRestarts.add(work);
    void work.finally(() => pendingRestarts.delete(work));
  };

  try {
    await migrate(db);
    const org = await organizationCreate(db, { name: 'chaos', slug: `chaos-${Date.now().toString(36)}`, planTier: 'unlimited', environment: 'development' });
    const organizationId = org.organization.id;
    const apiKey = org.apiKey.key;
    await db.query(`CREATE SCHEMA IF NOT EXISTS chaos;
      CREATE TABLE IF NOT EXISTS chaos.effects (
        id uuid PRIMARY KEY, job_id uuid NOT NULL, lease_id uuid, worker text NOT NULL,
        started_at timestamptz NOT NULL, finished_at timestamptz)`);

    const refreshBackends = () => proxy.setBackends(slots.flatMap((slot) => (slot.replica ? [slot.replica.url] : [])));
    const serverEnv = { DATABASE_POOL_MAX: '8', SPOOL_LEADER_TTL_MS: '3000', REGISTRATION_MODE: 'closed' };
    /** Starts the replica of a slot, retrying while PostgreSQL is down (a server refuses to start without it). */
    const startServer = async (slot: ServerSlot): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        slot.generation += 1;
        const out = logFile(`server-${slot.index}`);
        out.write(`--- start #${slot.generation} at ${elapsed()}\n`);
        try {
          const replica = await startReplica(databaseUrl, serverEnv, { onLine: (line) => out.write(`${line}\n`), startTimeoutMs: 180_000, signal: stopStarting.signal });
          if (stopping) {
            replica.child.kill('SIGKILL');
            return;
          }
          slot.replica = replica;
          refreshBackends();
          return;
        } catch (err) {
          if (stopping) return;
          log(`[chaos ${elapsed()}] server ${slot.index} failed to start (attempt ${attempt}): ${(err as Error).message.split('\n')[0]!.slice(0, 200)}`);
          if (attempt >= 20) throw err;
          await sleep(500);
        }
      }
    };

    const startWorker = (): WorkerProcess => {
      const name = `w${++workerSerial}`;
      const out = logFile('workers');
      const child = spawn(process.execPath, ['--import', 'tsx', 'reliability/chaos-worker.ts'], {
        cwd: ROOT,
        env: {
          ...process.env,
          CHAOS_WORKER_NAME: name,
          CHAOS_SPOOL_URL: proxy.url,
          CHAOS_API_KEY: apiKey,
          CHAOS_DATABASE_URL: databaseUrl,
          CHAOS_QUEUE: QUEUE,
          CHAOS_CONCURRENCY: String(options.concurrency),
          CHAOS_LEASE_SECONDS: String(options.leaseSeconds),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      createInterface({ input: child.stdout! }).on('line', (line) => out.write(`${line}\n`));
      createInterface({ input: child.stderr! }).on('line', (line) => out.write(`${name} stderr: ${line}\n`));
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      const worker = { name, child, exited };
      workers.set(name, worker);
      void exited.then(() => workers.delete(name));
      return worker;
    };

    await Promise.all(slots.map((slot) => startServer(slot)));
    log(`[chaos ${elapsed()}] ${options.servers} servers behind ${proxy.url}`);
    for (let i = 0; i < options.workers; i++) startWorker();

    // Enqueue through the proxy in batches with idempotency keys, so that a
    // batch whose answer is lost to a fault can simply be sent again.
    const client = new SpoolClient({ baseUrl: proxy.url, apiKey, timeoutMs: 15_000, retry: { maxRetries: 6, baseDelayMs: 200 } });
    const runKey = Date.now().toString(36);
    const jobIds: string[] = new Array(options.jobs);
    const enqueueStarted = Date.now();
    let enqueued = 0;
    const enqueue = async (): Promise<void> => {
      const batches: number[] = [];
      for (let start = 0; start < options.jobs; start += 100) batches.push(start);
      const lane = async () => {
        for (let start = batches.shift(); start !== undefined; start = batches.shift()) {
          const items = Array.from({ length: Math.min(100, options.jobs - start) }, (_, k) => ({
            payload: { i: start + k, workMs: Math.floor(Math.random() * (options.workMaxMs + 1)) },
            idempotencyKey: `chaos-${runKey}-${start + k}`,
          }));
          for (let attempt = 1; ; attempt++) {
            try {
              const answer = await client.jobs.bulk({ queueName: QUEUE, jobs: items, defaultMaxRetries: 100 });
              if (answer.failed.length > 0) throw new Error(`bulk refused ${answer.failed.length} items: ${answer.failed[0]!.error}`);
              for (const ok of answer.succeeded) jobIds[start + ok.index] = ok.jobId;
              enqueued += items.length;
              break;
            } catch (err) {
              if (attempt % 5 === 1) log(`[chaos ${elapsed()}] enqueue batch ${start} failed (attempt ${attempt}): ${(err as Error).message}`);
              if (Date.now() - began > options.timeoutSeconds * 1000) throw err;
              await sleep(Math.min(200 * attempt, 2000));
            }
          }
        }
      };
      await Promise.all([lane(), lane()]);
    };

    // Faults. Killed workers and servers come back after a short pause; PostgreSQL after its downtime.
    const faultsDone: Fault[] = [];
    let postgresBusy = false;
    let lastPostgres = 0;
    const fault = async (kind: Fault): Promise<boolean> => {
      if (kind === 'worker') {
        const victim = pick([...workers.values()]);
        if (!victim) return false;
        victim.child.kill('SIGKILL');
        log(`[chaos ${elapsed()}] SIGKILL worker ${victim.name}`);
        track((async () => {
          await victim.exited;
          await sleep(200 + Math.random() * 800);
          if (stopping) return;
          const fresh = startWorker();
          restarts.workers += 1;
          log(`[chaos ${elapsed()}] started worker ${fresh.name} in its place`);
        })());
        return true;
      }
      if (kind === 'server') {
        // Never the last live one: a replica takes seconds to start on a busy machine, and a
        // cluster that is down most of the time measures restart time, not recovery.
        const live = slots.filter((slot) => slot.replica);
        if (live.length < 2) return false;
        const slot = pick(live);
        if (!slot || !slot.replica) return false;
        const { replica } = slot;
        slot.replica = null;
        refreshBackends();
        replica.child.kill('SIGKILL');
        log(`[chaos ${elapsed()}] SIGKILL server ${slot.index} (pid ${replica.pid})`);
        track((async () => {
          await replica.exited;
          await sleep(500 + Math.random() * 1500);
          if (stopping) return;
          await startServer(slot);
          if (!slot.replica) return;
          restarts.servers += 1;
          log(`[chaos ${elapsed()}] server ${slot.index} restarted (pid ${slot.replica.pid})`);
        })());
        return true;
      }
      if (postgresBusy || Date.now() - lastPostgres < options.postgresEveryMs) return false;
      postgresBusy = true;
      lastPostgres = Date.now();
      const down = between(options.postgresDownMs);
      log(`[chaos ${elapsed()}] stopping PostgreSQL for ${Math.round(down)} ms`);
      track((async () => {
        try {
          await postgres!.stop();
          postgres = null;
          await sleep(down);
          postgres = await startEmbeddedPostgres({ dataDir: pgDir, settings: pgSettings, log: pgLog });
          if (postgres.port !== pgPort) throw new Error(`PostgreSQL came back on port ${postgres.port}, not ${pgPort}: another process took the port`);
          restarts.postgres += 1;
          lastPostgres = Date.now();
          log(`[chaos ${elapsed()}] PostgreSQL is back`);
        } finally {
          postgresBusy = false;
        }
      })());
      return true;
    };

    const chaos = (async () => {
      const queue = [...options.firstFaults];
      while (!stopping) {
        await sleep(between(options.faultEveryMs));
        if (stopping) break;
        const kind = queue[0] ?? pick<Fault>(['worker', 'worker', 'worker', 'server', 'server', 'postgres'])!;
        if (await fault(kind)) {
          faultsDone.push(kind);
          if (queue[0] === kind) queue.shift();
        }
      }
    })();

    // Progress, from the database (quiet while PostgreSQL is down).
    const counts = async () => {
      const rows = await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 GROUP BY status', [organizationId, QUEUE]);
      return Object.fromEntries(rows.rows.map((row) => [row.status, row.n])) as Record<string, number>;
    };
    let completedAt = 0;
    const progress = setInterval(() => {
      counts().then(
        (c) => log(`[chaos ${elapsed()}] enqueued ${enqueued}/${options.jobs} completed ${c.completed ?? 0} processing ${c.processing ?? 0} pending ${c.pending ?? 0}${c.deadletter ? ` deadletter ${c.deadletter}` : ''} | workers ${workers.size} servers ${slots.filter((s) => s.replica).length}/${slots.length} postgres ${postgres ? 'up' : 'down'} | restarts w${restarts.workers} s${restarts.servers} pg${restarts.postgres}`),
        () => log(`[chaos ${elapsed()}] (database unavailable) restarts w${restarts.workers} s${restarts.servers} pg${restarts.postgres}`),
      );
    }, options.progressEveryMs);

    await enqueue();
    log(`[chaos ${elapsed()}] all ${options.jobs} jobs enqueued in ${((Date.now() - enqueueStarted) / 1000).toFixed(1)} s`);
    const deadline = began + options.timeoutSeconds * 1000;
    const firstFaultsDone = () => options.firstFaults.every((kind) => faultsDone.includes(kind));
    while (Date.now() < deadline && !options.signal?.aborted) {
      const done = await counts().then((c) => (c.completed ?? 0) >= options.jobs, () => false);
      if (done && !completedAt) completedAt = Date.now();
      // The planned faults must all have happened (and PostgreSQL be back) before the run may end.
      if (done && firstFaultsDone() && restarts.postgres >= (options.firstFaults.includes('postgres') ? 1 : 0) && !postgresBusy) break;
      await sleep(250);
    }
    stopping = true;
    stopStarting.abort();
    clearInterval(progress);
    await chaos;
    await Promise.allSettled([...pendingRestarts]);
    if (!postgres) postgres = await startEmbeddedPostgres({ dataDir: pgDir, settings: pgSettings, log: pgLog });

    // Stop the processes before reading, so that nothing changes under the check.
    for (const worker of workers.values()) worker.child.kill('SIGKILL');
    await Promise.all([...workers.values()].map((w) => w.exited));

    const expected = jobIds.filter((id): id is string => typeof id === 'string');
    const jobs = (await db.query<CheckedJob>('SELECT id, status FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2', [organizationId, QUEUE])).rows;
    const history = (await db.query<HistoryEvent>(
      'SELECT job_id, event, from_status, to_status, lease_id, created_at FROM spool.job_events WHERE organization_id = $1 AND queue_name = $2 ORDER BY event_id',
      [organizationId, QUEUE],
    )).rows;
    const effects = (await db.query<Effect>('SELECT job_id, lease_id, worker, started_at, finished_at FROM chaos.effects')).rows;
    const verdict = checkChaos(expected, jobs, history, effects);
    // Jobs the run meant to enqueue but never got an id for count as lost too.
    verdict.lost += options.jobs - expected.length;
    verdict.jobs = options.jobs;
    const total = restarts.workers + restarts.servers + restarts.postgres;
    const line = `chaos: jobs=${verdict.jobs} completed=${verdict.completed} lost=${verdict.lost} live_overlap=${verdict.liveOverlap} reexecuted_after_expiry=${verdict.reexecutedAfterExpiry} restarts=${total}`;
    return {
      ...verdict,
      faults: { worker: faultsDone.filter((f) => f === 'worker').length, server: faultsDone.filter((f) => f === 'server').length, postgres: faultsDone.filter((f) => f === 'postgres').length },
      restarts: { ...restarts, total },
      durationMs: Date.now() - began,
      drained: completedAt > 0,
      drainMs: (completedAt || Date.now()) - enqueueStarted,
      proxy: { ...proxy.stats },
      line,
    };
  } finally {
    stopping = true;
    stopStarting.abort();
    for (const worker of workers.values()) worker.child.kill('SIGKILL');
    await Promise.all([...workers.values()].map((w) => w.exited));
    await Promise.allSettled([...pendingRestarts]);
    await Promise.all(slots.map(async (slot) => {
      const replica = slot.replica;
      if (!replica) return;
      replica.child.kill('SIGTERM');
      const stopped = await Promise.race([replica.exited.then(() => true), sleep(10_000).then(() => false)]);
      if (!stopped) replica.child.kill('SIGKILL');
    }));
    await proxy.close();
    await db.end().catch(() => {});
    const stopPostgres = postgres as EmbeddedPostgres | null;
    if (stopPostgres) await stopPostgres.stop();
    for (const stream of logs) stream.end();
    if (options.keep) log(`[chaos] kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
