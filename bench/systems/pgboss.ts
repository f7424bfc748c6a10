import { installedVersion } from '../lib/version.js';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { WorkerGroup } from '../lib/children.js';
import { holdXmin } from '../lib/hold-xmin.js';
import { nowMs } from '../lib/http.js';
import { concurrentCalls, futureDue, paced, until, type QueueSystem } from './system.js';

const QUEUE = 'bench';

/** pg-boss: send (S1) / insert (S2) from the harness, worker processes with batch fetches and NOTIFY wakeups. */
export class PgBossSystem implements QueueSystem {
  readonly name = 'pg-boss';
  readonly configuration = 'queue with notify; worker processes with useListenNotify, batchSize 100, localConcurrency 2, burstWhenBatchFull, pollingIntervalSeconds 0.5; send (S1), insert (S2)';
  readonly #url: string;
  #boss!: PgBoss;
  #pool!: pg.Pool;

  constructor(databaseUrl: string) {
    this.#url = databaseUrl;
  }

  async version(): Promise<string> {
    return installedVersion('pg-boss');
  }

  async setup(): Promise<void> {
    // The load generator's pool waits as long as graphile-worker's (pg.Pool: no timeout) instead of pg-boss' 10 s,
    // so an open-loop burst on a slow machine queues instead of failing.
    this.#boss = new PgBoss({ connectionString: this.#url, supervise: false, schedule: false, max: 10, connectionTimeoutMillis: 120_000 });
    this.#boss.on('error', (err) => console.error('[pg-boss]', err));
    await this.#boss.start();
    if (!(await this.#boss.getQueue(QUEUE))) await this.#boss.createQueue(QUEUE, { notify: true });
    this.#pool = new pg.Pool({ connectionString: this.#url, max: 2 });
    // The harness stops PostgreSQL right after teardown; a connection still closing then gets a FATAL
    // that, without a listener, crashed the run after its results were written.
    this.#pool.on('error', (err) => console.error('[pg-boss harness pool]', err.message));
  }

  async reset(): Promise<void> {
    await this.#boss.deleteAllJobs(QUEUE);
    await this.#pool.query('VACUUM pgboss.job');
  }

  enqueueSingle(jobs: number, callers: number): Promise<number> {
    return concurrentCalls(jobs, callers, async (i) => {
      await this.#boss.send(QUEUE, { i });
    });
  }

  async enqueueBulk(jobs: number, batch: number): Promise<number> {
    const started = performance.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      await this.#boss.insert(QUEUE, Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => ({ data: { i: offset + k } })));
    }
    return jobs / ((performance.now() - started) / 1000);
  }

  async preload(jobs: number, batch: number): Promise<void> {
    await this.enqueueBulk(jobs, batch);
  }

  async preloadScheduled(jobs: number, batch: number, aheadS: number): Promise<void> {
    const from = Date.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      await this.#boss.insert(QUEUE, Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => ({ data: { i: offset + k }, startAfter: futureDue(offset + k, aheadS, from) })));
    }
    await this.#pool.query('VACUUM (ANALYZE) pgboss.job');
  }

  /** Nothing due is left (S8's future jobs wait in 'created' an hour ahead; job_i14 serves the start_after bound). */
  async #done(): Promise<boolean> {
    const r = await this.#pool.query(`SELECT NOT EXISTS (SELECT 1 FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')
                                                          AND start_after < now() + interval '30 minutes') AS done`, [QUEUE]);
    return r.rows[0].done as boolean;
  }

  async drain(jobs: number, workers: number): Promise<number> {
    await this.#pool.query('ANALYZE pgboss.job');
    const group = await WorkerGroup.start('pgboss-worker.ts', workers, { DATABASE_URL: this.#url, QUEUE });
    try {
      const started = performance.now();
      group.go();
      await group.waitFor(jobs, 600_000);
      await until(() => this.#done());
      return jobs / ((performance.now() - started) / 1000);
    } finally {
      await group.stop();
    }
  }

  async latency(rate: number, seconds: number): Promise<number[]> {
    const group = await WorkerGroup.start('pgboss-worker.ts', 1, { DATABASE_URL: this.#url, QUEUE });
    try {
      await group.goAndWaitStarted();
      await paced(rate, seconds, async () => {
        await this.#boss.send(QUEUE, { t: nowMs() });
      });
      await group.waitFor(Math.round(rate * seconds), 60_000);
      return group.latencies;
    } finally {
      await group.stop();
    }
  }

  async steadyWorkers(concurrency: number, processes: number): Promise<WorkerGroup> {
    // Two fetch loops per process, each taking up to half the process' share: `concurrency` jobs in flight in total.
    const each = Math.max(2, Math.round(concurrency / processes));
    const group = await WorkerGroup.start('pgboss-worker.ts', processes, { DATABASE_URL: this.#url, QUEUE, LOOPS: '2', BATCH: String(Math.ceil(each / 2)) });
    await group.goAndWaitStarted();
    return group;
  }

  async enqueueStamped(t: number): Promise<void> {
    await this.#boss.send(QUEUE, { t });
  }

  holdXmin(): Promise<{ end(): Promise<void> }> {
    return holdXmin(this.#url, 'pgboss.version');
  }

  async teardown(): Promise<void> {
    await this.#boss?.stop({ graceful: false, timeout: 2000 }).catch(() => {});
    await this.#pool?.end();
  }
}
