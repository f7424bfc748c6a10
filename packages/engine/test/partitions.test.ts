import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  dlqPurge, jobCancelMany, jobClaim, jobCompleteMany, jobFailMany, jobHistory, jobInsertMany, jobRetentionDelete, jobRetryMany,
  migrate,
} from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

/**
 * spool.jobs partitioned by phase (migration 046): an existing database
 * keeps every job, its history, its dead-letter row and its idempotency key
 * through the upgrade; afterwards finished jobs live in spool.jobs_done, jobs
 * that can still move in spool.jobs_live, and an idempotency key holds for
 * its job's whole life, finished or not, until the job is deleted.
 */
const BEFORE = 46;
const STATUSES = ['pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];

async function partitionOf(t: TestDatabase, id: string): Promise<string[]> {
  // The phase's partition (jobs_done is itself partitioned by purge day, migration 047).
  const { rows } = await t.pool.query<{ part: string }>(
    `SELECT (SELECT a.relid::regclass::text FROM pg_partition_ancestors(j.tableoid) a
              WHERE a.relid IN ('spool.jobs_live'::regclass, 'spool.jobs_done'::regclass)) AS part
     FROM spool.jobs j WHERE j.id = $1`, [id]);
  return rows.map((r) => r.part);
}

describe('upgrade to a partitioned spool.jobs (migration 046)', () => {
  let t: TestDatabase;
  let org: string;
  const jobs = new Map<Status, string>();

  before(async () => {
    t = await createTestDatabase('upgrade-partitions', { empty: true });
    const client = await t.pool.connect();
    try {
      await migrate(t.pool, undefined, { below: BEFORE });
      org = (await client.query<{ id: string }>(`INSERT INTO spool.organizations (name, slug) VALUES ('Upgrade', 'upgrade-part') RETURNING id`)).rows[0]!.id;
      // Jobs in every state as migration 045's table held them, each with an
      // idempotency key and a history row; the dead-lettered one with its DLQ row.
      await client.query('BEGIN');
      await client.query('ALTER TABLE spool.jobs DISABLE TRIGGER USER');
      for (const status of STATUSES) {
        const { rows: [job] } = await client.query<{ id: string }>(
          `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, idempotency_key, scheduled_at, started_at, completed_at,
                                   assigned_worker_id, lease_id, lease_expires_at, last_error, retry_count, max_retries)
           VALUES ($1, 'upgrade', $2, jsonb_build_object('status', $2::text), 'key-' || $2,
                   CASE WHEN $2 = 'scheduled' THEN now() + interval '1 day' END,
                   CASE WHEN $2 IN ('processing', 'completed', 'failed', 'deadletter') THEN now() END,
                   CASE WHEN $2 IN ('completed', 'failed', 'deadletter', 'cancelled') THEN now() END,
                   CASE WHEN $2 = 'processing' THEN 'w-old' END,
                   CASE WHEN $2 = 'processing' THEN gen_random_uuid() END,
                   CASE WHEN $2 = 'processing' THEN now() + interval '1 hour' END,
                   CASE WHEN $2 IN ('failed', 'deadletter') THEN 'boom' END, 0, 0)
           RETURNING id`, [org, status]);
        jobs.set(status, job!.id);
        await client.query(
          `INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status)
           VALUES ($1, $2, 'upgrade', 'create', NULL, $3)`, [org, job!.id, status]);
      }
      await client.query(
        `INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
         VALUES ($1, $2, 'upgrade', '{}', 'boom', 0)`, [org, jobs.get('deadletter')]);
      await client.query('ALTER TABLE spool.jobs ENABLE TRIGGER USER');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const result = await migrate(t.pool);
    assert.ok(result.applied.some((name) => name.startsWith('046_')), 'migration 046 ran');
  });
  after(async () => t.drop());

  it('keeps every job in its status, in the partition of its status', async () => {
    for (const [status, id] of jobs) {
      const { rows } = await t.pool.query<{ status: string; phase: string; payload: unknown }>('SELECT status, phase, payload FROM spool.jobs WHERE id = $1', [id]);
      const phase = status === 'completed' || status === 'cancelled' ? 'done' : 'live';
      assert.deepEqual(rows, [{ status, phase, payload: { status } }], status);
      assert.deepEqual(await partitionOf(t, id), [`spool.jobs_${phase}`], status);
    }
  });

  it('keeps each job\'s history and the dead-letter row', async () => {
    for (const [status, id] of jobs) {
      const timeline = (await jobHistory(t.pool, org, id, 100)).map((e) => [e.event, e.to_status]);
      assert.deepEqual(timeline, [['create', status]], status);
    }
    const dlq = await t.pool.query('SELECT job_id FROM spool.dead_letter_queue WHERE organization_id = $1', [org]);
    assert.deepEqual(dlq.rows, [{ job_id: jobs.get('deadletter') }]);
  });

  it('keeps each job\'s idempotency key: an enqueue with it answers that job, finished or not', async () => {
    const keys = await t.pool.query<{ idempotency_key: string; job_id: string }>(
      'SELECT idempotency_key, job_id FROM spool.job_idempotency_keys WHERE organization_id = $1 ORDER BY idempotency_key', [org]);
    assert.deepEqual(keys.rows, [...jobs].map(([status, id]) => ({ idempotency_key: `key-${status}`, job_id: id })).sort((a, b) => a.idempotency_key.localeCompare(b.idempotency_key)));
    const answers = await jobInsertMany(t.pool, STATUSES.map((status) => ({ organizationId: org, queueName: 'upgrade', payload: { again: true }, idempotencyKey: `key-${status}` })));
    assert.deepEqual(answers, STATUSES.map((status) => ({ id: jobs.get(status), created: false, status })));
  });

  it('lets the upgraded jobs carry on: the pending one completes into jobs_done, the dead-lettered one is retried', async () => {
    const [claimed] = await jobClaim(t.pool, { organizationId: org, queueName: 'upgrade', workerId: 'w-new', limit: 1, leaseSeconds: 60 });
    assert.equal(claimed!.id, jobs.get('pending'));
    const [done] = await jobCompleteMany(t.pool, org, [{ id: claimed!.id, workerId: 'w-new', leaseId: claimed!.lease_id!, result: { ok: true } }]);
    assert.ok(done!.ok);
    assert.deepEqual(await partitionOf(t, claimed!.id), ['spool.jobs_done']);
    const [retried] = await jobRetryMany(t.pool, { organizationId: org, ids: [jobs.get('deadletter')!], resetRetryCount: true, from: ['deadletter'] });
    assert.equal(retried!.status, 'pending');
    assert.deepEqual(await partitionOf(t, jobs.get('deadletter')!), ['spool.jobs_live']);
    assert.equal((await t.pool.query('SELECT 1 FROM spool.dead_letter_queue WHERE job_id = $1', [jobs.get('deadletter')])).rowCount, 0);
  });
});

describe('finished jobs in spool.jobs_done', () => {
  let t: TestDatabase;
  let org: string;

  before(async () => {
    t = await createTestDatabase('partitions');
    org = await createOrganization(t.pool);
  });
  after(async () => t.drop());

  async function claimOne(queue: string) {
    const [job] = await jobClaim(t.pool, { organizationId: org, queueName: queue, workerId: 'w', limit: 1, leaseSeconds: 60 });
    assert.ok(job, `a job of ${queue} was claimed`);
    return job;
  }

  it('moves a completed and a cancelled job to jobs_done; failed and dead-lettered jobs stay live and can be retried', async () => {
    const [a, b, c, d] = await jobInsertMany(t.pool, ['done-a', 'done-b', 'done-c', 'done-d'].map((queue) => ({ organizationId: org, queueName: queue, payload: {}, maxRetries: 0 })));
    for (const job of [a, b, c, d]) assert.deepEqual(await partitionOf(t, job!.id), ['spool.jobs_live']);

    const running = await claimOne('done-a');
    await jobCompleteMany(t.pool, org, [{ id: running.id, workerId: 'w', leaseId: running.lease_id!, result: 1 }]);
    assert.deepEqual(await partitionOf(t, a!.id), ['spool.jobs_done']);

    const cancelled = await jobCancelMany(t.pool, org, [b!.id]);
    assert.equal(cancelled.get(b!.id)!.outcome, 'cancelled');
    assert.deepEqual(await partitionOf(t, b!.id), ['spool.jobs_done']);

    const failing = await claimOne('done-c');
    await jobFailMany(t.pool, org, [{ id: failing.id, workerId: 'w', leaseId: failing.lease_id!, error: 'boom' }]);
    const { rows: [dead] } = await t.pool.query<{ status: string }>('SELECT status FROM spool.jobs WHERE id = $1', [c!.id]);
    assert.equal(dead!.status, 'deadletter');
    assert.deepEqual(await partitionOf(t, c!.id), ['spool.jobs_live']);

    // A dead-lettered job retried, claimed again and completed: it ends in jobs_done.
    await jobRetryMany(t.pool, { organizationId: org, ids: [c!.id], resetRetryCount: true, from: ['deadletter'] });
    const again = await claimOne('done-c');
    assert.equal(again.id, c!.id);
    await jobCompleteMany(t.pool, org, [{ id: again.id, workerId: 'w', leaseId: again.lease_id!, result: 2 }]);
    assert.deepEqual(await partitionOf(t, c!.id), ['spool.jobs_done']);

    // A cancel of a running job is a request; the job finishes cancelled when its worker fails or releases it.
    const cancelling = await claimOne('done-d');
    await jobCancelMany(t.pool, org, [d!.id]);
    await jobFailMany(t.pool, org, [{ id: cancelling.id, workerId: 'w', leaseId: cancelling.lease_id!, error: 'stopped' }]);
    const { rows: [ended] } = await t.pool.query<{ status: string; phase: string }>('SELECT status, phase FROM spool.jobs WHERE id = $1', [d!.id]);
    assert.deepEqual({ ...ended }, { status: 'cancelled', phase: 'done' });
  });

  it('keeps a finished job\'s idempotency key: a later enqueue with it answers the finished job', async () => {
    const [first] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'keyed', payload: { n: 1 }, idempotencyKey: 'finished-key' }]);
    assert.equal(first!.created, true);
    const running = await claimOne('keyed');
    await jobCompleteMany(t.pool, org, [{ id: running.id, workerId: 'w', leaseId: running.lease_id!, result: null }]);
    const [again] = await jobInsertMany(t.pool, [{ organizationId: org, queueName: 'keyed', payload: { n: 2 }, idempotencyKey: 'finished-key' }]);
    assert.deepEqual(again, { id: first!.id, created: false, status: 'completed' });
    const { rows } = await t.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND idempotency_key = 'finished-key'", [org]);
    assert.equal(rows[0]!.n, 1);
  });

  it('frees a key, and deletes the dead-letter row, with the job: retention and the DLQ purge', async () => {
    const [kept, purged] = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: 'retained', payload: {}, idempotencyKey: 'retained-key', maxRetries: 0 },
      { organizationId: org, queueName: 'purged', payload: {}, idempotencyKey: 'purged-key', maxRetries: 0 },
    ]);
    for (const queue of ['retained', 'purged']) {
      const job = await claimOne(queue);
      await jobFailMany(t.pool, org, [{ id: job.id, workerId: 'w', leaseId: job.lease_id!, error: 'boom' }]);
    }
    const dlqRows = async (id: string) => (await t.pool.query('SELECT 1 FROM spool.dead_letter_queue WHERE job_id = $1', [id])).rowCount;
    assert.equal(await dlqRows(kept!.id), 1);

    await t.pool.query("UPDATE spool.jobs SET completed_at = now() - interval '31 days' WHERE id = $1", [kept!.id]);
    await t.pool.query("UPDATE spool.jobs SET created_at = now() - interval '31 days' WHERE id = $1", [kept!.id]);
    const deleted = await jobRetentionDelete(t.pool, ['deadletter'], 100);
    assert.equal(deleted.jobs, 1);
    assert.equal(await dlqRows(kept!.id), 0, 'retention deleted the dead-letter row');

    assert.equal(await dlqPurge(t.pool, { organizationId: org, queueName: 'purged', limit: 10 }), 1);
    assert.equal(await dlqRows(purged!.id), 0, 'the purge deleted the dead-letter row');

    const keys = await t.pool.query("SELECT 1 FROM spool.job_idempotency_keys WHERE organization_id = $1 AND idempotency_key IN ('retained-key', 'purged-key')", [org]);
    assert.equal(keys.rowCount, 0, 'both keys went with their jobs');
    const fresh = await jobInsertMany(t.pool, [
      { organizationId: org, queueName: 'retained', payload: {}, idempotencyKey: 'retained-key' },
      { organizationId: org, queueName: 'purged', payload: {}, idempotencyKey: 'purged-key' },
    ]);
    assert.deepEqual(fresh.map((f) => f.created), [true, true], 'a freed key makes a new job');
  });
});
