/**
 * PATCH /jobs/{id} (extension): editing a pending, scheduled or
 * dead-lettered job, field by field, with the status rules, the key's
 * queues (old and new), validation, tenant isolation, and the history row
 * that records who edited what.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';
import { MISSING_ID, assertError, claim, enqueue, enqueueAndClaim } from './jobs-helpers.js';

let server: TestServer;
let apiKeyId: string;
before(async () => {
  server = await startTestServer('jobedit');
  apiKeyId = (await server.spool.db.query<{ id: string }>('SELECT id::text FROM spool.api_keys WHERE organization_id = $1', [server.organizationId])).rows[0]!.id;
});
after(async () => server?.close());

const req = (method: string, path: string, body?: unknown, auth?: string) => server.request(method, `/api/v1${path}`, { body, auth });
const patch = (id: string, body: unknown, auth?: string) => req('PATCH', `/jobs/${id}`, body, auth);
const history = async (id: string) => (await req('GET', `/jobs/${id}/history`)).body as any[];

/** A job dead-lettered the real way: no retries, claimed, failed. */
async function deadLettered(queue: string, payload: unknown = { v: 1 }): Promise<string> {
  const job = await enqueueAndClaim(server, queue, { max_retries: 0, payload });
  const failed = await req('POST', `/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'boom' });
  assert.equal(failed.status, 200, failed.text);
  assert.equal((await req('GET', `/jobs/${job.id}`)).body.status, 'deadletter');
  return job.id;
}

describe('PATCH /jobs/{id}: fields', () => {
  it('edits each field of a pending job and answers the job as GET /jobs/{id} does', async () => {
    const id = await enqueue(server, { queue_name: 'edit-a', payload: { n: 1 }, priority: 1, max_retries: 3, tags: { a: 1 } });
    const res = await patch(id, { payload: { n: 2 }, priority: 7, max_retries: 5, tags: { b: 2 } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, (await req('GET', `/jobs/${id}`)).body);
    assert.deepEqual(res.body.payload, { n: 2 });
    assert.equal(res.body.priority, 7);
    assert.equal(res.body.max_retries, 5);
    assert.deepEqual(res.body.tags, { b: 2 });
    assert.equal(res.body.status, 'pending');

    assert.equal((await patch(id, { tags: null })).body.tags, null, 'tags: null clears them');
    assert.equal((await patch(id, { payload: null })).body.payload, null, 'a payload of JSON null is a payload');

    const moved = await patch(id, { queue_name: 'edit-b' });
    assert.equal(moved.body.queue_name, 'edit-b');
    const [claimed] = await claim(server, { queue_name: 'edit-b' });
    assert.equal(claimed?.id, id, 'the job is claimed from its new queue');
  });

  it('scheduled_at: the future makes a pending job scheduled; now or the past makes a scheduled job pending', async () => {
    const id = await enqueue(server, { queue_name: 'edit-s' });
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await patch(id, { scheduled_at: later });
    assert.equal(scheduled.status, 200, scheduled.text);
    assert.equal(scheduled.body.status, 'scheduled');
    assert.equal(scheduled.body.scheduled_at, later);
    assert.deepEqual(await claim(server, { queue_name: 'edit-s' }), [], 'a scheduled job is not claimed');

    const due = await patch(id, { scheduled_at: new Date(Date.now() - 1000).toISOString() });
    assert.equal(due.body.status, 'pending');
    assert.equal((await claim(server, { queue_name: 'edit-s' }))[0]?.id, id);

    const other = await enqueue(server, { queue_name: 'edit-s', scheduled_at: later });
    const now = await patch(other, { scheduled_at: null });
    assert.equal(now.body.status, 'pending');
    assert.equal(now.body.scheduled_at, null);

    const events = (await history(id)).filter((r) => r.event === 'edit').map((r) => [r.from_status, r.to_status]);
    assert.deepEqual(events, [['pending', 'scheduled'], ['scheduled', 'pending']]);
  });

  it('an edit that changes nothing answers the job and writes no history', async () => {
    const id = await enqueue(server, { queue_name: 'edit-same', priority: 3 });
    const res = await patch(id, { priority: 3, queue_name: 'edit-same' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.priority, 3);
    assert.equal((await history(id)).filter((r) => r.event === 'edit').length, 0);
  });
});

describe('PATCH /jobs/{id}: status rules', () => {
  it('a processing, completed or cancelled job is a 409 saying why and what to do', async () => {
    const running = await enqueueAndClaim(server, 'edit-st');
    const busy = await patch(running.id, { priority: 5 });
    assertError(busy, 409, 'CONFLICT', /processing.*cancel it first/);
    assert.equal(busy.body.details.status, 'processing');

    assert.equal((await req('POST', `/jobs/${running.id}/complete`, { worker_id: 'w1', lease_id: running.lease_id })).status, 200);
    assertError(await patch(running.id, { priority: 5 }), 409, 'CONFLICT', /completed/);

    const cancelled = await enqueue(server, { queue_name: 'edit-st' });
    assert.equal((await req('DELETE', `/jobs/${cancelled}`)).status, 204);
    assertError(await patch(cancelled, { payload: {} }), 409, 'CONFLICT', /cancelled/);
    assert.equal((await req('GET', `/jobs/${running.id}`)).body.priority, 0, 'nothing changed');
  });

  it('a dead-lettered job stays dead-lettered, and the retry runs the edited job', async () => {
    const id = await deadLettered('edit-dl', { broken: true });
    const res = await patch(id, { payload: { fixed: true }, priority: 9, max_retries: 0 });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'deadletter');
    assert.equal(res.body.retry_count, 0);
    const dlq = await req('GET', '/jobs/dlq?queue_name=edit-dl');
    assert.deepEqual(dlq.body.map((j: any) => j.id), [id], 'still in the dead-letter queue');

    assert.equal((await req('POST', `/jobs/${id}/retry`)).status, 200);
    const [rerun] = await claim(server, { queue_name: 'edit-dl' });
    assert.equal(rerun.id, id);
    assert.deepEqual(rerun.payload, { fixed: true });
    assert.equal(rerun.priority, 9);
  });

  it('a dead-lettered job may be moved to another queue and replayed there (DLQ replay)', async () => {
    const id = await deadLettered('edit-dl-from');
    assert.equal((await patch(id, { queue_name: 'edit-dl-to' })).body.queue_name, 'edit-dl-to');
    const left = await server.spool.db.query<{ queue_name: string }>('SELECT queue_name FROM spool.dead_letter_queue WHERE job_id = $1', [id]);
    assert.deepEqual(left.rows.map((r) => r.queue_name), ['edit-dl-to'], 'its dead_letter_queue row follows it');
    const replay = await req('POST', '/jobs/dlq/retry', { queue_name: 'edit-dl-to' });
    assert.deepEqual(replay.body.retried_jobs, [id]);
  });

  it('scheduled_at on a dead-lettered job is a 409; max_retries below retry_count is a 400 unless dead-lettered', async () => {
    const dead = await deadLettered('edit-rules');
    assertError(await patch(dead, { scheduled_at: new Date(Date.now() + 60_000).toISOString() }), 409, 'CONFLICT', /scheduled_at.*retried/);

    await req('PUT', '/queues/edit-rules2/config', { backoff_base_ms: 0, backoff_max_ms: 0, backoff_jitter_ms: 0 });
    const job = await enqueueAndClaim(server, 'edit-rules2', { max_retries: 3 });
    assert.equal((await req('POST', `/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'once' })).status, 200);
    const refused = await patch(job.id, { max_retries: 0 });
    assertError(refused, 400, 'VALIDATION_ERROR', /max_retries 0 is below the job's retry_count 1/);
    assert.equal((await patch(job.id, { max_retries: 1 })).body.max_retries, 1, 'equal to retry_count is allowed');

    const twice = await deadLettered('edit-rules3');
    await server.spool.db.query('UPDATE spool.jobs SET retry_count = 2 WHERE id = $1', [twice]);
    assert.equal((await patch(twice, { max_retries: 1 })).body.max_retries, 1, 'a dead-lettered job may go below');
  });

  it('a failed job (loaded as is) may be edited too', async () => {
    const id = await loadJobsAsIs(server.spool.db, async (c) => (await c.query<{ id: string }>(
      "INSERT INTO spool.jobs (organization_id, queue_name, status, payload, completed_at) VALUES ($1, 'edit-failed', 'failed', '{}', now()) RETURNING id::text",
      [server.organizationId],
    )).rows[0]!.id);
    const res = await patch(id, { payload: { again: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'failed');
  });

  it('a scheduled_at at or past the job\'s expires_at is a 400', async () => {
    const expires = new Date(Date.now() + 60_000).toISOString();
    const id = await enqueue(server, { queue_name: 'edit-exp', expires_at: expires });
    assertError(await patch(id, { scheduled_at: new Date(Date.now() + 120_000).toISOString() }), 400, 'VALIDATION_ERROR', /expires_at/);
  });
});

describe('PATCH /jobs/{id}: validation', () => {
  it('refuses an empty body, unknown fields and values POST /jobs refuses, naming the field', async () => {
    const id = await enqueue(server, { queue_name: 'edit-v' });
    assertError(await patch(id, {}), 400, 'VALIDATION_ERROR', /at least one of payload, priority/);
    assertError(await patch(id, { timeout_seconds: 5 }), 400, 'VALIDATION_ERROR', /timeout_seconds is not allowed/);
    assertError(await patch(id, { priority: 101 }), 400, 'VALIDATION_ERROR', /priority/);
    assertError(await patch(id, { priority: '5' }), 400, 'VALIDATION_ERROR', /priority/);
    assertError(await patch(id, { max_retries: -1 }), 400, 'VALIDATION_ERROR', /max_retries/);
    assertError(await patch(id, { queue_name: 'bad name!' }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await patch(id, { queue_name: '' }), 400, 'VALIDATION_ERROR', /queue_name/);
    assertError(await patch(id, { tags: ['x'] }), 400, 'VALIDATION_ERROR', /tags/);
    assertError(await patch(id, { scheduled_at: 'tomorrow' }), 400, 'VALIDATION_ERROR', /scheduled_at/);
    assertError(await patch(id, { priority: null }), 400, 'VALIDATION_ERROR', /priority/);
    const big = await patch(id, { payload: { blob: 'x'.repeat(1024 * 1024) } });
    assert.equal(big.status, 413, big.text);
    assert.match(big.body.message, /payload is \d+ bytes/);
    const bigTags = await patch(id, { tags: { blob: 'x'.repeat(65 * 1024) } });
    assert.equal(bigTags.status, 413, bigTags.text);
    assert.deepEqual((await history(id)).map((r) => r.event), ['create'], 'nothing was written');
  });

  it('a plan\'s payload limit applies as for POST /jobs', async () => {
    const free = await server.createOrganization('free');
    const id = await enqueue(server, { queue_name: 'edit-plan' }, free.apiKey);
    const res = await patch(id, { payload: { blob: 'x'.repeat(200 * 1024) } }, free.apiKey);
    assertError(res, 403, 'LIMIT_EXCEEDED');
    assert.equal(res.body.details.resource, 'payload_size');
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await server.request('GET', '/docs/json', { auth: null })).body;
    const operation = doc.paths['/api/v1/jobs/{id}']?.patch;
    assert.ok(operation, Object.keys(doc.paths).filter((p: string) => p.startsWith('/api/v1/jobs/')).join(', '));
    assert.deepEqual(Object.keys(operation.requestBody.content['application/json'].schema.properties).sort(), ['max_retries', 'payload', 'priority', 'queue_name', 'scheduled_at', 'tags']);
  });

  it('unknown, malformed and other organizations\' jobs are a 404', async () => {
    assertError(await patch(MISSING_ID, { priority: 1 }), 404, 'NOT_FOUND');
    assertError(await patch('not-a-uuid', { priority: 1 }), 404, 'NOT_FOUND');
    const id = await enqueue(server, { queue_name: 'edit-t', priority: 2 });
    const other = await server.createOrganization();
    assertError(await patch(id, { priority: 9 }, other.apiKey), 404, 'NOT_FOUND');
    assertError(await patch(id, { queue_name: 'edit-t2' }, other.apiKey), 404, 'NOT_FOUND');
    assert.equal((await req('GET', `/jobs/${id}`)).body.priority, 2);
    assert.equal((await patch(id.toUpperCase(), { priority: 4 })).body.priority, 4, 'ids are case-insensitive');
    assert.equal((await server.request('PATCH', `/api/v1/jobs/${id}`, { body: { priority: 1 }, auth: null })).status, 401);
  });
});

describe('PATCH /jobs/{id}: the key\'s queues and role', () => {
  it('needs the job\'s queue (404 otherwise) and the new queue (403 otherwise)', async () => {
    const key = await req('POST', '/api-keys', { name: 'edit-scope', queues: ['edit-mine*'] });
    assert.equal(key.status, 201, key.text);
    const mine = await enqueue(server, { queue_name: 'edit-mine-1', priority: 1 });
    const theirs = await enqueue(server, { queue_name: 'edit-other', priority: 1 });

    assert.equal((await patch(mine, { priority: 2 }, key.body.key)).body.priority, 2);
    assert.equal((await patch(mine, { queue_name: 'edit-mine-2' }, key.body.key)).body.queue_name, 'edit-mine-2', 'between its own queues');
    const out = await patch(mine, { queue_name: 'edit-other' }, key.body.key);
    assertError(out, 403, 'ACCESS_DENIED', /edit-other/);
    assertError(await patch(theirs, { priority: 5 }, key.body.key), 404, 'NOT_FOUND');
    assertError(await patch(theirs, { queue_name: 'edit-mine-1' }, key.body.key), 404, 'NOT_FOUND', /Job not found/);
    assert.equal((await req('GET', `/jobs/${mine}`)).body.queue_name, 'edit-mine-2');
    assert.equal((await req('GET', `/jobs/${theirs}`)).body.queue_name, 'edit-other');
  });

  it('needs an admin key (the role that may cancel, retry and set priorities)', async () => {
    const id = await enqueue(server, { queue_name: 'edit-role' });
    for (const role of ['producer', 'worker', 'read_only']) {
      const key = await req('POST', '/api-keys', { name: `edit-${role}`, role });
      assertError(await patch(id, { priority: 3 }, key.body.key), 403, 'ACCESS_DENIED', /job\.update.*admin key/);
    }
  });
});

describe('PATCH /jobs/{id}: history', () => {
  it('writes an edit row with the actor and the changed fields, shown by GET /jobs/{id}/history', async () => {
    const id = await enqueue(server, { queue_name: 'edit-h', priority: 1, payload: { a: 1 } });
    assert.equal((await patch(id, { payload: { a: 2 }, priority: 6, queue_name: 'edit-h2', max_retries: 3 })).status, 200);
    const rows = await history(id);
    const edit = rows.find((r) => r.event === 'edit');
    assert.ok(edit, JSON.stringify(rows));
    assert.equal(edit.actor, `api_key:${apiKeyId}`);
    assert.equal(edit.from_status, 'pending');
    assert.equal(edit.to_status, 'pending');
    assert.deepEqual(edit.details.fields.sort(), ['payload', 'priority', 'queue_name']);
    assert.deepEqual(edit.details.from, { priority: 1, queue_name: 'edit-h' });
    assert.deepEqual(edit.details.to, { priority: 6, queue_name: 'edit-h2' });
    assert.equal(rows[0].actor, null, 'the creation records no actor');
  });

  it('PUT /jobs/{id}/priority is an edit of the priority in the history too, with the actor; the same value writes nothing', async () => {
    const id = await enqueue(server, { queue_name: 'edit-prio', priority: 2 });
    const set = await req('PUT', `/jobs/${id}/priority`, { priority: 9 });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body, { job_id: id, old_priority: 2, new_priority: 9 });
    const edits = (await history(id)).filter((r) => r.event === 'edit');
    assert.equal(edits.length, 1, JSON.stringify(edits));
    assert.equal(edits[0].actor, `api_key:${apiKeyId}`);
    assert.deepEqual([edits[0].from_status, edits[0].to_status], ['pending', 'pending']);
    assert.deepEqual(edits[0].details, { fields: ['priority'], from: { priority: 2 }, to: { priority: 9 } });
    assert.equal((await req('PUT', `/jobs/${id}/priority`, { priority: 9 })).status, 200);
    assert.equal((await history(id)).filter((r) => r.event === 'edit').length, 1, 'no change, no row');
  });

  it('records the actor of a retry and a cancel through the API, and of an access token\'s session', async () => {
    const dead = await deadLettered('edit-actor');
    assert.equal((await req('POST', `/jobs/${dead}/retry`)).status, 200);
    assert.equal((await history(dead)).find((r) => r.event === 'retry')?.actor, `api_key:${apiKeyId}`);
    const failedRow = (await history(dead)).find((r) => r.event === 'fail_final');
    assert.equal(failedRow?.actor, null, 'a worker\'s failure is the server\'s own record');

    const login = await server.request('POST', '/api/v1/auth/login', { body: { api_key: server.apiKey }, auth: null });
    assert.equal(login.status, 200, login.text);
    const pending = await enqueue(server, { queue_name: 'edit-actor' });
    assert.equal((await req('DELETE', `/jobs/${pending}`, undefined, login.body.access_token)).status, 204);
    const cancel = (await history(pending)).find((r) => r.event === 'cancel');
    assert.match(cancel?.actor ?? '', new RegExp(`^api_key:${apiKeyId}/session:[0-9a-f-]{36}$`));
  });

  it('records the actor of a workflow\'s retry and cancel, and of a DLQ purge', async () => {
    const workflow = async (queue: string, maxRetries?: number) => {
      const created = await req('POST', '/workflows', { name: queue, jobs: [{ key: 'A', queue_name: queue, payload: {}, ...(maxRetries === undefined ? {} : { max_retries: maxRetries }) }] });
      assert.equal(created.status, 201, created.text);
      return { id: created.body.workflow_id as string, job: created.body.job_ids[0].job_id as string };
    };
    const failed = await workflow('edit-wf-retry', 0);
    const [job] = await claim(server, { queue_name: 'edit-wf-retry' });
    assert.equal(job.id, failed.job);
    assert.equal((await req('POST', `/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: 'boom' })).status, 200);
    const retried = await req('POST', `/workflows/${failed.id}/retry`);
    assert.equal(retried.status, 200, retried.text);
    assert.equal((await history(failed.job)).find((r) => r.event === 'retry')?.actor, `api_key:${apiKeyId}`);

    const open = await workflow('edit-wf-cancel');
    assert.equal((await req('POST', `/workflows/${open.id}/cancel`)).status, 200);
    assert.equal((await history(open.job)).find((r) => r.event === 'cancel')?.actor, `api_key:${apiKeyId}`);

    const dead = await deadLettered('edit-purge');
    const purged = await req('POST', '/jobs/dlq/purge', { queue_name: 'edit-purge', confirm: true });
    assert.deepEqual(purged.body, { purged_count: 1 });
    const rows = await server.spool.db.query<{ actor: string | null }>("SELECT actor FROM spool.job_history WHERE job_id = $1 AND event = 'purge'", [dead]);
    assert.deepEqual(rows.rows, [{ actor: `api_key:${apiKeyId}` }], 'the job is gone; its history row names who purged it');
  });

  it('an edit of a dead-lettered job counts no dead letter in the queue figures or metrics', async () => {
    const id = await deadLettered('edit-stats');
    await server.rollUp();
    const counted = async () => (await server.spool.db.query<{ n: number }>(
      'SELECT coalesce(sum(deadlettered), 0)::int AS n FROM spool.queue_stats_minute WHERE organization_id = $1 AND queue_name = $2',
      [server.organizationId, 'edit-stats'],
    )).rows[0]!.n;
    assert.equal(await counted(), 1);
    assert.equal((await patch(id, { payload: { again: 1 } })).status, 200);
    assert.equal((await patch(id, { priority: 4 })).status, 200);
    // The figures not yet rolled up (the view the activity history adds) skip them too.
    const unread = await server.spool.db.query<{ n: number }>(
      "SELECT coalesce(sum(deadlettered), 0)::int AS n FROM spool.queue_stats_pending WHERE organization_id = $1 AND queue_name = 'edit-stats'", [server.organizationId]);
    assert.equal(unread.rows[0]!.n, 0);
    await server.rollUp();
    assert.equal(await counted(), 1, 'the edits are no dead letters');
  });
});
