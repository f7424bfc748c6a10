import assert from 'node:assert/strict';
import pg from 'pg';
import { jobClaim, jobInsertMany, type JobRow, type NewJob, type Queryable } from '@spool/engine';

/** Inserts one job and returns its id. */
export async function insertJob(db: Queryable, organizationId: string, queueName: string, extra: Partial<NewJob> = {}): Promise<string> {
  const [job] = await jobInsertMany(db, [{ organizationId, queueName, payload: { test: true }, ...extra }]);
  assert.ok(job?.created, 'job inserted');
  return job.id;
}

/** Claims exactly one job of the queue for `workerId` and returns it. */
export async function claimOne(db: Queryable, organizationId: string, queueName: string, workerId: string, leaseSeconds = 30): Promise<JobRow> {
  const jobs = await jobClaim(db, { organizationId, queueName, workerId, limit: 1, leaseSeconds });
  assert.equal(jobs.length, 1, `one job claimed from ${queueName}`);
  return jobs[0]!;
}

/** The full job row as stored now. */
export async function jobRow(db: Queryable, id: string): Promise<JobRow> {
  const result = await db.query<JobRow>('SELECT * FROM spool.jobs WHERE id = $1', [id]);
  assert.equal(result.rows.length, 1, `job ${id} exists`);
  return result.rows[0]!;
}

/** Makes a processing job's lease already expired, as if its worker had gone silent. */
export async function expireLease(db: Queryable, id: string): Promise<void> {
  const result = await db.query(`UPDATE spool.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1 AND status = 'processing'`, [id]);
  assert.equal(result.rowCount, 1, 'lease moved into the past');
}

export interface HistoryRow {
  id: number;
  event: string;
  from_status: string | null;
  to_status: string | null;
  worker_id: string | null;
  lease_id: string | null;
  message: string | null;
}

/** A job's history events (spool.job_events: its own rows and its place in rows of many), oldest first. */
export async function historyOf(db: Queryable, id: string): Promise<HistoryRow[]> {
  const result = await db.query<HistoryRow>(
    'SELECT event_id AS id, event, from_status, to_status, worker_id, lease_id, message FROM spool.job_events WHERE job_id = $1 ORDER BY event_id',
    [id],
  );
  return result.rows;
}

/**
 * Waits until every backend in `pids` waits on a lock, so a test can open a
 * gate knowing all its concurrent statements really are in flight together.
 */
export async function waitUntilBlocked(db: Queryable, pids: number[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const result = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND wait_event_type = 'Lock'`, [pids]);
    if (result.rows[0]!.n === pids.length) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`the ${pids.length} concurrent statements never all waited on a lock`);
}

/**
 * Claims a queue dry from `claimers` pools of one connection each, all at
 * once, each claim of `limit`. Returns how many jobs were claimed and how
 * many of them had already gone to another claim (which must be none).
 */
export async function claimDryConcurrently(url: string, claimers: number, claim: (pool: pg.Pool, claimer: number) => Promise<JobRow[]>): Promise<{ claimed: number; duplicates: number }> {
  const pools = Array.from({ length: claimers }, () => new pg.Pool({ connectionString: url, max: 1 }));
  const seen = new Set<string>();
  let duplicates = 0;
  try {
    await Promise.all(pools.map(async (pool, claimer) => {
      for (;;) {
        const jobs = await claim(pool, claimer);
        if (jobs.length === 0) break;
        for (const job of jobs) {
          if (seen.has(job.id)) duplicates += 1;
          seen.add(job.id);
        }
      }
    }));
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
  }
  return { claimed: seen.size, duplicates };
}
