import { installedVersion } from '../lib/version.js';
import pg from 'pg';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { WorkerGroup } from '../lib/children.js';
import { nowMs } from '../lib/http.js';
import { concurrentCalls, paced, until, type BenchSystem } from './system.js';

/** graphile-worker: in-process library; addJob / addJobs from the harness, worker processes running `run()`. */
export class GraphileSystem implements BenchSystem {
  readonly name = 'graphile-worker';
  readonly configuration = 'worker processes with concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0; addJob (S1), addJobs (S2)';
  readonly #url: string;
  #pool!: pg.Pool;
  #utils!: WorkerUtils;

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

  async #empty(): Promise<boolean> {
    const r = await this.#pool.query('SELECT NOT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS empty');
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

  async teardown(): Promise<void> {
    await this.#utils?.release();
    await this.#pool?.end();
  }
}
