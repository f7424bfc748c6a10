import { installedVersion } from '../lib/version.js';
import pg from 'pg';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { WorkerGroup } from '../lib/children.js';
import { holdXmin } from '../lib/hold-xmin.js';
import { nowMs } from '../lib/http.js';
import { concurrentCalls, futureDue, paced, until, type QueueSystem } from './system.js';

/** graphile-worker: in-process library; addJob / addJobs from the harness, worker processes running `run()`. */
export class GraphileSystem implements QueueSystem {
  readonly name = 'graphile-worker';
  readonly configuration = 'worker processes with concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0; addJob (S1), addJobs (S2)';
  readonly #url: string;
  #pool!: pg.Pool;
  #utils!: WorkerUtils;
  /** Highest job id of S8's future jobs: the drain's jobs come after it (ids only grow, TRUNCATE keeps the sequence). */
  #scheduledUpTo = '0';

  constructor(databaseUrl: string) {
    this.#url = databaseUrl;
  }

  async version(): Promise<string> {
    return installedVersion('graphile-worker');
  }

  async setup(): Promise<void> {
    this.#pool = new pg.Pool({ connectionString: this.#url, max: 10 });
    this.#pool.on('error', (err) => console.error('[graphile-worker pool]', err.message));
    this.#utils = await makeWorkerUtils({ pgPool: this.#pool });
    await this.#utils.migrate();
  }

  async reset(): Promise<void> {
    await this.#pool.query('TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues CASCADE');
    this.#scheduledUpTo = '0';
  }

  enqueueSingle(jobs: number, callers: number): Promise<number> {
    return concurrentCalls(jobs, callers, async (i) => {
      await this.#utils.addJob('noop', { i });
    });
  }

  async enqueueBulk(jobs: number, batch: number): Promise<number> {
    const started = performance.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      const specs = Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => ({ identifier: 'noop', payload: { i: offset + k } }));
      await this.#utils.addJobs(specs);
    }
    return jobs / ((performance.now() - started) / 1000);
  }

  async preload(jobs: number, batch: number): Promise<void> {
    await this.enqueueBulk(jobs, batch);
  }

  async preloadScheduled(jobs: number, batch: number, aheadS: number): Promise<void> {
    const from = Date.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      const specs = Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => ({ identifier: 'noop', payload: { i: offset + k }, runAt: futureDue(offset + k, aheadS, from) }));
      await this.#utils.addJobs(specs);
    }
    await this.#pool.query('VACUUM (ANALYZE) graphile_worker._private_jobs');
    this.#scheduledUpTo = (await this.#pool.query('SELECT coalesce(max(id), 0)::text AS id FROM graphile_worker._private_jobs')).rows[0].id as string;
  }

  /** graphile-worker deletes finished jobs: the drain is over when no job after S8's future ones is left (a primary-key range, not a scan of them). */
  async #empty(): Promise<boolean> {
    const r = await this.#pool.query('SELECT NOT EXISTS (SELECT 1 FROM graphile_worker._private_jobs WHERE id > $1::bigint) AS empty', [this.#scheduledUpTo]);
    return r.rows[0].empty as boolean;
  }

  async drain(jobs: number, workers: number): Promise<number> {
    await this.#pool.query('ANALYZE graphile_worker._private_jobs');
    const group = await WorkerGroup.start('graphile-worker.ts', workers, { DATABASE_URL: this.#url });
    try {
      const started = performance.now();
      group.go();
      await group.waitFor(jobs, 600_000);
      await until(() => this.#empty());
      return jobs / ((performance.now() - started) / 1000);
    } finally {
      await group.stop();
    }
  }

  async latency(rate: number, seconds: number): Promise<number[]> {
    const group = await WorkerGroup.start('graphile-worker.ts', 1, { DATABASE_URL: this.#url });
    try {
      await group.goAndWaitStarted();
      await paced(rate, seconds, async () => {
        await this.#utils.addJob('noop', { t: nowMs() });
      });
      await group.waitFor(Math.round(rate * seconds), 60_000);
      return group.latencies;
    } finally {
      await group.stop();
    }
  }

  async steadyWorkers(concurrency: number, processes: number): Promise<WorkerGroup> {
    const group = await WorkerGroup.start('graphile-worker.ts', processes, { DATABASE_URL: this.#url, CONCURRENCY: String(Math.max(1, Math.round(concurrency / processes))) });
    await group.goAndWaitStarted();
    return group;
  }

  async enqueueStamped(t: number): Promise<void> {
    await this.#utils.addJob('noop', { t });
  }

  holdXmin(): Promise<{ end(): Promise<void> }> {
    return holdXmin(this.#url, 'graphile_worker._private_tasks');
  }

  async teardown(): Promise<void> {
    await this.#utils?.release();
    await this.#pool?.end();
  }
}
