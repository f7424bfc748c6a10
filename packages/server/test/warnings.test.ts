import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('warnings');
});
after(async () => server.close());

const warning = (headers: Headers) => headers.get('warning');

describe('contract parameters keep the contract and say what they changed (Warning: 299)', () => {
  it('an unknown status filter is ignored, as the contract says, and named', async () => {
    for (const queue of ['wa', 'wb']) assert.equal((await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {} } })).status, 201);
    const all = await server.request('GET', '/api/v1/jobs');
    const bogus = await server.request('GET', '/api/v1/jobs?status=bogus');
    assert.equal(bogus.status, 200);
    assert.deepEqual(bogus.body.map((j: { id: string }) => j.id), all.body.map((j: { id: string }) => j.id), 'every job is listed, as before');
    assert.equal(warning(all.headers), null);
    assert.match(warning(bogus.headers) ?? '', /^299 - "status=bogus ignored \(not one of pending, scheduled, processing, completed, failed, deadletter, cancelled\): not filtered by it"$/);
  });

  it('limit and offset out of range are clamped and named; a valid query warns about nothing', async () => {
    const big = await server.request('GET', '/api/v1/jobs?limit=500&offset=-3');
    assert.equal(big.status, 200);
    assert.match(warning(big.headers) ?? '', /299 - "limit=500 clamped to 100 \(1\.\.100\)", 299 - "offset=-3 clamped to 0/);
    const junk = await server.request('GET', '/api/v1/jobs?limit=lots');
    assert.match(warning(junk.headers) ?? '', /limit=lots ignored: not a number; used 50/);
    const dlq = await server.request('GET', '/api/v1/jobs/dlq?limit=0');
    assert.match(warning(dlq.headers) ?? '', /limit=0 clamped to 1/);
    const workflows = await server.request('GET', '/api/v1/workflows?status=done&limit=1000');
    assert.equal(workflows.status, 200);
    assert.match(warning(workflows.headers) ?? '', /status=done ignored .*limit=1000 clamped to 100/);
    const fine = await server.request('GET', '/api/v1/jobs?status=pending&limit=10&order_by=priority&order_dir=ASC');
    assert.equal(fine.status, 200);
    assert.equal(warning(fine.headers), null);
  });

  it("a claim's limit and lease outside the contract's ranges are clamped and named, and so is a heartbeat's lease", async () => {
    for (let i = 0; i < 3; i++) await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'w-claim', payload: { i } } });
    const claim = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'w-claim', worker_id: 'w1', limit: 500, lease_duration_secs: 2 } });
    assert.equal(claim.status, 200);
    assert.equal(claim.body.jobs.length, 3);
    assert.match(warning(claim.headers) ?? '', /299 - "limit=500 clamped to 100 \(1\.\.100\)", 299 - "lease_duration_secs=2 clamped to 5 \(5\.\.3600\)"/);
    const job = claim.body.jobs[0];
    const leaseLeft = (Date.parse(job.lease_expires_at) - Date.now()) / 1000;
    assert.ok(leaseLeft > 3 && leaseLeft <= 5.5, `the lease used is the clamped 5 s (${leaseLeft} s left)`);
    const beat = await server.request('POST', `/api/v1/jobs/${job.id}/heartbeat`, { body: { worker_id: 'w1', lease_id: job.lease_id, lease_duration_secs: 7200 } });
    assert.equal(beat.status, 200);
    assert.match(warning(beat.headers) ?? '', /lease_duration_secs=7200 clamped to 3600 \(5\.\.3600\)/);
    const fine = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'w-claim', worker_id: 'w1', limit: 10, lease_duration_secs: 60 } });
    assert.equal(warning(fine.headers), null);
  });

  it('an unknown order is ignored (newest first) and named', async () => {
    const res = await server.request('GET', '/api/v1/jobs?order_by=colour&order_dir=sideways');
    assert.equal(res.status, 200);
    assert.match(warning(res.headers) ?? '', /order_by=colour ignored \(not one of [^)]*\): sorted by created_at.*order_dir=sideways ignored \(not one of asc, desc\): sorted descending/);
  });

  it('a misspelled query parameter is named', async () => {
    const res = await server.request('GET', '/api/v1/jobs?stauts=failed');
    assert.equal(res.status, 200);
    assert.match(warning(res.headers) ?? '', /unknown query parameter ignored: stauts/);
  });
});

describe('unknown body fields are ignored and named, never refused', () => {
  it('"delay": 5 on POST /jobs: created as without it, with a warning that says so', async () => {
    const res = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'delay', payload: { delay: 'inside the payload is fine' }, delay: 5, tags: { any: 'key' } } });
    assert.equal(res.status, 201);
    assert.equal(warning(res.headers), '299 - "unknown field ignored: delay"');
    const job = await server.request('GET', `/api/v1/jobs/${res.body.id}`);
    assert.equal(job.body.status, 'pending', 'the job runs at once: say scheduled_at for a delay');
  });

  it('every field the contract names, and free-form blobs with any keys, warn about nothing', async () => {
    const res = await server.request('POST', '/api/v1/jobs', {
      body: {
        queue_name: 'full', payload: { a: { deep: [1, { x: 1 }] } }, priority: 5, max_retries: 2, timeout_seconds: 60,
        scheduled_at: new Date(Date.now() + 60_000).toISOString(), expires_at: null, idempotency_key: 'full-1', tags: { t: 1 },
        parent_job_id: null, completion_webhook: null,
      },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(warning(res.headers), null);
  });

  it('nested items are checked too, by path; several fields are listed', async () => {
    const res = await server.request('POST', '/api/v1/jobs/bulk', { body: { queue_name: 'bulk', jobs: [{ payload: {} }, { payload: {}, delay: 5, prio: 1 }], dry_run: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success_count, 2);
    assert.equal(warning(res.headers), '299 - "unknown field ignored: dry_run", 299 - "unknown fields ignored: jobs[1].delay, jobs[1].prio"');
  });

  it('field names a client sent are shown as short printable ASCII', async () => {
    const res = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'odd', payload: {}, ['dé"lay\\']: 1, ['x'.repeat(100)]: 2 } });
    assert.equal(res.status, 201);
    const text = warning(res.headers) ?? '';
    assert.match(text, /unknown fields ignored: d\?'lay', x{37}\.\.\."$/);
  });
});

describe("Spool's own extension parameters refuse unknown values (400)", () => {
  it('GET /jobs/{id}/history limit outside 1..1000', async () => {
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'hist', payload: {} } });
    for (const limit of ['0', '5000', 'many', '2.5']) {
      const res = await server.request('GET', `/api/v1/jobs/${created.body.id}/history?limit=${limit}`);
      assert.equal(res.status, 400, limit);
      assert.equal(res.body.code, 'VALIDATION_ERROR');
      assert.match(res.body.message, /^limit must be an integer from 1 to 1000 .*leave it out for 500/);
    }
    assert.equal((await server.request('GET', `/api/v1/jobs/${created.body.id}/history?limit=10`)).status, 200);
  });

  it('schedule preview count outside 1..100', async () => {
    const preview = await server.request('POST', '/api/v1/schedules/preview', { body: { cron_expression: '0 * * * *', count: 500 } });
    assert.equal(preview.status, 400);
    assert.match(preview.body.message, /count/);
    const schedule = await server.request('POST', '/api/v1/schedules', { body: { name: 'hourly', cron_expression: '0 * * * *', queue_name: 'cron', payload_template: {} } });
    assert.equal(schedule.status, 201, schedule.text);
    const byId = await server.request('GET', `/api/v1/schedules/${schedule.body.id}/preview?count=101`);
    assert.equal(byId.status, 400);
    assert.match(byId.body.message, /^count must be an integer from 1 to 100/);
    const ok = await server.request('GET', `/api/v1/schedules/${schedule.body.id}/preview?count=3`);
    assert.equal(ok.body.next_runs.length, 3);
  });
});
