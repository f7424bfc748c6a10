import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPool, jobInsertMany, organizationCreate, type Db } from '@spool/engine';
import { grpcClient, toStruct, type GrpcTestClient } from '../../test-support/grpc.js';
import { WorkerGroup } from '../lib/children.js';
import { holdXmin } from '../lib/hold-xmin.js';
import { JsonClient, nowMs } from '../lib/http.js';
import { concurrentCalls, futureDue, paced, sleep, until, type QueueSystem } from './system.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * How the server runs: as `npm start` runs it, the build in dist/ (made
 * current once per bench process); SPOOL_BENCH_SERVER=tsx runs the
 * TypeScript through tsx instead, whose CPU profiles point at source lines.
 */
let built = false;
function serverEntry(): string[] {
  if (process.env.SPOOL_BENCH_SERVER === 'tsx') return ['--import', 'tsx', 'packages/server/src/main.ts'];
  if (!built) {
    const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (build.status !== 0) throw new Error('scripts/build.mjs failed: the server in packages/server/dist cannot be run');
    built = true;
  }
  return ['--conditions=spool-dist', 'packages/server/dist/main.js'];
}
const QUEUE = 'bench';

/** A scenario Spool cannot run yet because the endpoint it needs has not landed. */
export class NotAvailable extends Error {}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export type Transport = 'http' | 'grpc';

/**
 * Spool as users run it: the server (packages/server/src/main.ts) in its own
 * process, workers in their own processes, everything over HTTP with
 * keep-alive. Only setup and scenario bookkeeping touch the database directly.
 * With the `grpc` transport, single enqueues and workers use spooled.v1 gRPC
 * instead (bulk loads stay on HTTP: gRPC has no bulk enqueue).
 */
export class SpoolSystem implements QueueSystem {
  readonly name: string;
  readonly configuration: string;
  readonly #transport: Transport;
  readonly #databaseUrl: string;
  readonly #serverEnv: Record<string, string>;
  #grpcAddress = '';
  #grpc: GrpcTestClient | null = null;
  #server: ChildProcess | null = null;
  #dataDir = '';
  url = '';
  db!: Db;
  #client!: JsonClient;
  #apiKey = '';
  organizationId = '';

  /** `serverEnv`: more environment variables for the server process (bench/ab-drain.ts compares settings by them). */
  constructor(databaseUrl: string, transport: Transport = 'http', serverEnv: Record<string, string> = {}) {
    this.#databaseUrl = databaseUrl;
    this.#serverEnv = serverEnv;
    this.#transport = transport;
    this.name = transport === 'grpc' ? 'spool-grpc' : 'spool';
    this.configuration = transport === 'grpc'
      ? 'server process (default pool 20) + worker processes over gRPC: 4 StreamJobs streams each (server claims up to 16 per round), unary Complete per job; S1 by unary Enqueue, bulk loads over HTTP'
      : process.env.SPOOL_BENCH_WORKER === 'minimal'
        ? 'server process as npm start runs it (dist/; default pool 20, AUTH_CACHE_MS=2000) + minimal worker processes over HTTP (bench/workers/spool-worker.ts): 4 claim loops each, claim limit 100 with wait_ms 1000, batch complete'
        : 'server process as npm start runs it (dist/; default pool 20, AUTH_CACHE_MS=2000) + SDK Worker processes over HTTP (@spool/sdk, bench/workers/spool-sdk-worker.ts): concurrency 400, maxBatch 100 (4 claims and 4 batch reports in flight), wait_ms 1000; S4: concurrency 20, maxBatch 10, wait_ms 5000';
  }

  get #workerScript(): string {
    if (this.#transport === 'grpc') return 'spool-grpc-worker.ts';
    // The SDK's Worker, as users run it; SPOOL_BENCH_WORKER=minimal runs the
    // bare protocol loop instead (what a worker in any language could do).
    return process.env.SPOOL_BENCH_WORKER === 'minimal' ? 'spool-worker.ts' : 'spool-sdk-worker.ts';
  }

  get #workerEnv(): Record<string, string> {
    return { SPOOL_URL: this.url, SPOOL_GRPC: this.#grpcAddress, API_KEY: this.#apiKey, QUEUE };
  }

  async version(): Promise<string> {
    const { execFileSync } = await import('node:child_process');
    try {
      return `git ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()}`;
    } catch {
      return 'working tree';
    }
  }

  async setup(): Promise<void> {
    const port = await freePort();
    const grpcPort = this.#transport === 'grpc' ? await freePort() : 0;
    this.#grpcAddress = `127.0.0.1:${grpcPort}`;
    this.#dataDir = mkdtempSync(join(tmpdir(), 'spool-bench-server-'));
    this.url = `http://127.0.0.1:${port}`;
    // e.g. SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the server during a run.
    const nodeArgs = process.env.SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    this.#server = spawn(process.execPath, [...nodeArgs, ...serverEntry()], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: this.#databaseUrl, PORT: String(port), GRPC_PORT: String(grpcPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', AUTH_CACHE_MS: process.env.AUTH_CACHE_MS ?? '2000', SPOOL_DATA_DIR: this.#dataDir, ...this.#serverEnv },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await until(async () => {
      if (this.#server?.exitCode !== null) throw new Error('the Spool server exited while starting');
      try {
        return (await fetch(`${this.url}/health/ready`)).status === 200;
      } catch {
        return false;
      }
    }, 60_000);
    this.db = createPool({ connectionString: this.#databaseUrl, max: 4, applicationName: 'spool-bench' });
    const org = await organizationCreate(this.db, { name: 'bench', slug: `bench-${Date.now()}`, planTier: 'unlimited', environment: 'development' });
    this.organizationId = org.organization.id;
    this.#apiKey = org.apiKey.key;
    this.#client = new JsonClient(this.url, this.#apiKey, 16);
    if (this.#transport === 'grpc') this.#grpc = grpcClient(this.#grpcAddress, this.#apiKey);
  }

  /** One job through the system's own transport; `payload` is a flat object. */
  async #enqueueOne(payload: Record<string, number>): Promise<void> {
    if (this.#grpc) {
      const answer = await this.#grpc.call('queue', 'Enqueue', { queueName: QUEUE, payload: toStruct(payload) });
      if (!answer.created) throw new Error(`Enqueue answered ${JSON.stringify(answer)}`);
      return;
    }
    const res = await this.#client.post('/api/v1/jobs', { queue_name: QUEUE, payload });
    if (res.status !== 201) throw new Error(`POST /jobs answered ${res.status}: ${JSON.stringify(res.body)}`);
  }

  async reset(): Promise<void> {
    await this.db.query('TRUNCATE spool.jobs, spool.job_history, spool.dead_letter_queue CASCADE');
  }

  async enqueueSingle(jobs: number, callers: number): Promise<number> {
    return concurrentCalls(jobs, callers, (i) => this.#enqueueOne({ i }));
  }

  /** S1's shape over HTTP with a `job_key` per job (bench/cost.ts's key phases); hits answer 200. */
  async enqueueSingleKeyed(jobs: number, callers: number, jobKey: (i: number) => Record<string, unknown>): Promise<number> {
    return concurrentCalls(jobs, callers, async (i) => {
      const res = await this.#client.post('/api/v1/jobs', { queue_name: QUEUE, payload: { i }, job_key: jobKey(i) });
      if (res.status !== 201 && res.status !== 200) throw new Error(`POST /jobs answered ${res.status}: ${JSON.stringify(res.body)}`);
    });
  }

  async enqueueBulk(jobs: number, batch: number): Promise<number> {
    return this.#bulk(jobs, batch, (i) => ({ payload: { i } }));
  }

  async #bulk(jobs: number, batch: number, item: (i: number) => { payload: unknown; scheduled_at?: string }): Promise<number> {
    // The contract caps /jobs/bulk at 100 items; a server that refuses 1,000
    // gets the same 1,000 as 10 concurrent requests of 100.
    let split = false;
    const send = async (items: { payload: unknown; scheduled_at?: string }[]) => {
      const res = await this.#client.post('/api/v1/jobs/bulk', { queue_name: QUEUE, jobs: items });
      if (res.status === 404) throw new NotAvailable('POST /api/v1/jobs/bulk is not implemented yet');
      if (res.status === 400 && items.length > 100) return false;
      if (res.status !== 200 || res.body.failure_count !== 0) throw new Error(`bulk answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
      return true;
    };
    const started = performance.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      const items = Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => item(offset + k));
      if (!split && (await send(items))) continue;
      split = true;
      const chunks: (typeof items)[] = [];
      for (let k = 0; k < items.length; k += 100) chunks.push(items.slice(k, k + 100));
      await Promise.all(chunks.map(send));
    }
    this.bulkSplit = split;
    return jobs / ((performance.now() - started) / 1000);
  }

  bulkSplit = false;

  /** Through the API when /jobs/bulk exists; otherwise straight through the engine (the load is not what a drain measures). */
  async preload(jobs: number, batch: number, via: 'api' | 'engine' = 'api'): Promise<void> {
    if (via === 'api') {
      try {
        await this.enqueueBulk(jobs, batch);
        return;
      } catch (err) {
        if (!(err instanceof NotAvailable)) throw err;
      }
    }
    for (let offset = 0; offset < jobs; offset += batch) {
      const chunk = Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => ({ organizationId: this.organizationId, queueName: QUEUE, payload: { i: offset + k } }));
      await jobInsertMany(this.db, chunk);
    }
  }

  async preloadScheduled(jobs: number, batch: number, aheadS: number): Promise<void> {
    const from = Date.now();
    await this.#bulk(jobs, batch, (i) => ({ payload: { i }, scheduled_at: futureDue(i, aheadS, from).toISOString() }));
    await this.db.query('VACUUM (ANALYZE) spool.jobs');
  }

  /** Jobs left to drain; scheduled jobs are not pending, so S8's future jobs do not count. */
  async #remaining(): Promise<boolean> {
    const r = await this.db.query(`SELECT EXISTS (SELECT 1 FROM spool.jobs WHERE status = 'pending' AND dependencies_met IS NOT FALSE)
                                      OR EXISTS (SELECT 1 FROM spool.jobs WHERE status = 'processing') AS busy`);
    return r.rows[0].busy as boolean;
  }

  async #checkWorkerApi(): Promise<void> {
    const res = await this.#client.post('/api/v1/jobs/claim', { queue_name: '__probe__', worker_id: 'probe', limit: 1 });
    if (res.status === 404) throw new NotAvailable('POST /api/v1/jobs/claim is not implemented yet');
  }

  async drain(jobs: number, workers: number): Promise<number> {
    await this.#checkWorkerApi();
    await this.db.query('ANALYZE spool.jobs');
    const group = await WorkerGroup.start(this.#workerScript, workers, this.#workerEnv);
    try {
      const started = performance.now();
      group.go();
      await group.waitFor(jobs, 600_000);
      await until(async () => !(await this.#remaining()));
      return jobs / ((performance.now() - started) / 1000);
    } finally {
      await group.stop();
    }
  }

  async latency(rate: number, seconds: number): Promise<number[]> {
    await this.#checkWorkerApi();
    const group = await WorkerGroup.start(this.#workerScript, 1, { ...this.#workerEnv, LOOPS: '2', CONCURRENCY: '20', BATCH: '10', WAIT_MS: '5000' });
    try {
      await group.goAndWaitStarted();
      await paced(rate, seconds, () => this.#enqueueOne({ t: nowMs() }));
      await group.waitFor(Math.round(rate * seconds), 60_000);
      return group.latencies;
    } finally {
      await group.stop();
    }
  }

  async steadyWorkers(concurrency: number, processes: number): Promise<WorkerGroup> {
    await this.#checkWorkerApi();
    // Claims of up to 8 (four in flight for 32): a steady trickle fills small claims, as in S4.
    const each = Math.max(1, Math.round(concurrency / processes));
    const group = await WorkerGroup.start(this.#workerScript, processes, { ...this.#workerEnv, LOOPS: '4', CONCURRENCY: String(each), BATCH: String(Math.max(1, Math.ceil(each / 4))), WAIT_MS: '5000' });
    await group.goAndWaitStarted();
    return group;
  }

  enqueueStamped(t: number): Promise<void> {
    return this.#enqueueOne({ t });
  }

  holdXmin(): Promise<{ end(): Promise<void> }> {
    return holdXmin(this.#databaseUrl);
  }

  async teardown(): Promise<void> {
    this.#client?.close();
    this.#grpc?.close();
    await this.db?.end();
    if (this.#server && this.#server.exitCode === null) {
      const exited = new Promise((r) => this.#server!.once('exit', r));
      this.#server.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (this.#server.exitCode === null) this.#server.kill('SIGKILL');
    }
    if (this.#dataDir) rmSync(this.#dataDir, { recursive: true, force: true });
  }
}
