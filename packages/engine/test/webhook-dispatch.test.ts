import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobCompleteMany, webhookCreate, webhookDispatch } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { claimOne, insertJob } from './helpers.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('webhook-dispatch');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

async function cursor(name: string): Promise<{ scanned_to: number; gaps: unknown[] }> {
  return (await t.pool.query('SELECT scanned_to, gaps FROM spool.event_cursors WHERE name = $1', [name])).rows[0];
}

async function historyEnd(): Promise<number> {
  return (await t.pool.query('SELECT max(id)::int AS id FROM spool.job_history')).rows[0].id;
}

async function deliveries(): Promise<{ event: string; job_id: string | null; webhook_id: string | null }[]> {
  return (await t.pool.query('SELECT event, job_id, webhook_id FROM spool.webhook_deliveries ORDER BY history_id, event')).rows;
}

// One database for the file: the tests run in order, from no consumer at all
// to a completion webhook and then a subscribed webhook.
describe('webhook dispatch', () => {
  it('with nothing to deliver to, moves its cursor to the end of the log without reading it', async () => {
    for (let i = 0; i < 5; i++) await insertJob(t.pool, org, 'wd-idle');
    const result = await webhookDispatch(t.pool);
    assert.deepEqual(result, { read: 0, created: 0 });
    assert.deepEqual(await cursor('webhooks'), { scanned_to: await historyEnd(), gaps: [] });
    assert.deepEqual(await deliveries(), []);
  });

  it('a disabled webhook consumes nothing', async () => {
    await webhookCreate(t.pool, { organizationId: org, name: 'off', url: 'http://localhost:9/off', events: ['job.created'], enabled: false });
    await insertJob(t.pool, org, 'wd-idle');
    assert.deepEqual(await webhookDispatch(t.pool), { read: 0, created: 0 });
    assert.equal((await cursor('webhooks')).scanned_to, await historyEnd());
  });

  it('reads the log while a job has a completion webhook, and delivers its completion', async () => {
    const before = (await cursor('webhooks')).scanned_to;
    const id = await insertJob(t.pool, org, 'wd-completion', { completionWebhook: 'http://localhost:9/done' });
    const job = await claimOne(t.pool, org, 'wd-completion', 'w1');
    const [outcome] = await jobCompleteMany(t.pool, org, [{ id, workerId: 'w1', leaseId: job.lease_id }]);
    assert.equal(outcome!.ok, true);
    const result = await webhookDispatch(t.pool);
    assert.equal(result.read, 3, 'create, claim and complete were read');
    assert.equal(result.created, 1);
    assert.ok((await cursor('webhooks')).scanned_to > before);
    assert.deepEqual(await deliveries(), [{ event: 'job.completed', job_id: id, webhook_id: null }]);
  });

  it('reads the log for an enabled webhook, from the events after it was created', async () => {
    await t.pool.query('DELETE FROM spool.jobs WHERE completion_webhook IS NOT NULL');
    await t.pool.query('DELETE FROM spool.webhook_deliveries');
    await insertJob(t.pool, org, 'wd-before');
    await webhookDispatch(t.pool); // nothing consumes this one: skipped
    const hook = await webhookCreate(t.pool, { organizationId: org, name: 'on', url: 'http://localhost:9/on', events: ['job.created'] });
    const id = await insertJob(t.pool, org, 'wd-after');
    const result = await webhookDispatch(t.pool);
    assert.equal(result.read, 1);
    assert.deepEqual(await deliveries(), [{ event: 'job.created', job_id: id, webhook_id: hook.id }]);
  });
});
