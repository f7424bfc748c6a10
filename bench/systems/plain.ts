import pg from 'pg';
import { concurrentCalls, type BenchSystem } from './system.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS plain_jobs (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue      text NOT NULL,
  status     text NOT NULL DEFAULT 'pending',
  payload    jsonb NOT NULL,
  locked_by  text,
  created_at timestamptz NOT NULL DEFAULT now(),
  done_at    timestamptz
);
CREATE INDEX IF NOT EXISTS plain_jobs_claim ON plain_jobs (queue, id) WHERE status = 'pending';`;

const CLAIM = {
  name: 'plain_claim',
  text: `UPDATE plain_jobs SET status = 'processing', locked_by = $2
         WHERE id IN (SELECT id FROM plain_jobs WHERE queue = $1 AND status = 'pending' ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
         RETURNING id`,
};
const COMPLETE = { name: 'plain_complete', text: "UPDATE plain_jobs SET status = 'completed', done_at = now() WHERE id = ANY($1::bigint[])" };
const INSERT_ONE = { name: 'plain_insert_one', text: 'INSERT INTO plain_jobs (queue, payload) VALUES ($1, $2)' };
const INSERT_MANY = { name: 'plain_insert_many', text: 'INSERT INTO plain_jobs (queue, payload) SELECT $1, p FROM unnest($2::jsonb[]) AS p' };

/**
 * The plain-SQL ceiling: the least a queue can do on this PostgreSQL.
 * S1 = prepared single-row INSERT (no NOTIFY), S2 = one multi-row INSERT per
 * batch, S5 = 4 connections claiming 100 with SKIP LOCKED and completing them
 * by status update (rows kept, like Spool). No history, leases or HTTP.
 */
export class PlainSqlSystem implements BenchSystem {
  readonly name = 'plain-sql';
  readonly configuration = 'prepared statements; S5 = 4 connections, claim 100 (UPDATE ... SKIP LOCKED) then complete by status update';
  readonly #url: string;
  #pool!: pg.Pool;

  constructor(databaseUrl: string) {
    this.#url = databaseUrl;
  }

  async version(): Promise<string> {
    return '-';
  }

  async setup(): Promise<void> {
    this.#pool = new pg.Pool({ connectionString: this.#url, max: 8 });
    this.#pool.on('error', (err) => console.error('[plain-sql pool]', err.message));
    await this.#pool.query(SCHEMA);
  }

  async reset(): Promise<void> {
    await this.#pool.query('TRUNCATE plain_jobs');
  }

  enqueueSingle(jobs: number, callers: number): Promise<number> {
    return concurrentCalls(jobs, callers, async (i) => {
      await this.#pool.query({ ...INSERT_ONE, values: ['bench', { i }] });
    });
  }

  async enqueueBulk(jobs: number, batch: number): Promise<number> {
    const started = performance.now();
    for (let offset = 0; offset < jobs; offset += batch) {
      const payloads = Array.from({ length: Math.min(batch, jobs - offset) }, (_, k) => JSON.stringify({ i: offset + k }));
      await this.#pool.query({ ...INSERT_MANY, values: ['bench', payloads] });
    }
    return jobs / ((performance.now() - started) / 1000);
  }

  /** S5: `connections` loops of claim-100-and-complete until the queue is empty. */
  async preload(jobs: number, batch: number): Promise<void> {
    await this.enqueueBulk(jobs, batch);
  }

  async drain(jobs: number, connections = 4): Promise<number> {
    await this.#pool.query('ANALYZE plain_jobs');
    const started = performance.now();
    let done = 0;
    await Promise.all(Array.from({ length: connections }, async (_, k) => {
      const client = await this.#pool.connect();
      try {
        for (;;) {
          const claimed = await client.query<{ id: string }>({ ...CLAIM, values: ['bench', `w${k}`] });
          if (claimed.rows.length === 0) break;
          await client.query({ ...COMPLETE, values: [claimed.rows.map((r) => r.id)] });
          done += claimed.rows.length;
        }
      } finally {
        client.release();
      }
    }));
    if (done !== jobs) throw new Error(`plain drain completed ${done} of ${jobs}`);
    return jobs / ((performance.now() - started) / 1000);
  }

  async latency(): Promise<number[]> {
    throw new Error('not measured for plain SQL');
  }

  async teardown(): Promise<void> {
    await this.#pool?.end();
  }
}
