/**
 * on_parent_failure over HTTP (docs/workflows.md, "When a parent fails") and
 * GET /jobs/{id}/dependencies/results.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { httpWorker, type HttpWorker } from '../../../test-support/worker.js';

let server: TestServer;
let worker: HttpWorker;
before(async () => {
  server = await startTestServer('workflow_failure_policy');
  worker = httpWorker(server);
});
after(async () => server.close());

async function createWorkflow(body: Record<string, unknown>): Promise<{ workflowId: string; id: Record<string, string> }> {
  const created = await server.request('POST', '/api/v1/workflows', { body });
  assert.equal(created.status, 201, created.text);
  return { workflowId: created.body.workflow_id, id: Object.fromEntries(created.body.job_ids.map((j: { key: string; job_id: string }) => [j.key, j.job_id])) };
}

const chain = (queue: string, extra: Record<string, unknown> = {}) => ({
  name: `chain ${queue}`,
  ...extra,
  jobs: [
    { key: 'A', queue_name: queue, payload: { step: 'A' }, max_retries: 0 },
    { key: 'B', queue_name: queue, payload: { step: 'B' }, depends_on: ['A'] },
    { key: 'C', queue_name: queue, payload: { step: 'C' }, depends_on: ['B'] },
  ],
});

async function statusOf(id: string): Promise<string> {
  return (await server.request('GET', `/api/v1/jobs/${id}`)).body.status;
}

/** Claims the one due job of `queue` and fails it for good (max_retries 0). */
async function failOnly(queue: string, error: string): Promise<string> {
  const [job] = await worker.claim(queue, 1);
  assert.ok(job, `a job of ${queue} to fail`);
  await worker.fail(job, error);
  return job.id;
}

describe('on_parent_failure', () => {
  it('cancel: A dead-letters, B and C are cancelled with history saying why', async () => {
    const { workflowId, id } = await createWorkflow(chain('http-cancel', { on_parent_failure: 'cancel' }));
    assert.equal(await failOnly('http-cancel', 'A broke'), id.A);
    assert.deepEqual([await statusOf(id.A!), await statusOf(id.B!), await statusOf(id.C!)], ['deadletter', 'cancelled', 'cancelled']);
    const history = (await server.request('GET', `/api/v1/jobs/${id.B}/history`)).body as { event: string; details: unknown; to_status: string }[];
    const cancel = history.find((h) => h.event === 'cancel');
    assert.deepEqual(cancel?.details, { reason: 'parent_failed', parent_id: id.A, parent_status: 'deadletter', on_parent_failure: 'cancel' });
    const wf = (await server.request('GET', `/api/v1/workflows/${workflowId}`)).body;
    assert.deepEqual([wf.status, wf.failed_jobs, wf.cancelled_jobs, wf.blocked_jobs], ['failed', 1, 2, 0]);
    assert.deepEqual(wf.dependencies.map((d: { on_parent_failure: string }) => d.on_parent_failure), ['cancel', 'cancel']);
    assert.deepEqual(wf.jobs.find((j: { key: string }) => j.key === 'B').on_parent_failure, { [id.A!]: 'cancel' });
  });

  it('continue: B runs after A fails for good and reads its error from the results call', async () => {
    const { id } = await createWorkflow(chain('http-continue', { on_parent_failure: 'continue' }));
    await failOnly('http-continue', 'upstream 503');
    const [b] = await worker.claim('http-continue', 5);
    assert.equal(b?.id, id.B);
    const results = await server.request('GET', `/api/v1/jobs/${id.B}/dependencies/results`);
    assert.equal(results.status, 200, results.text);
    assert.equal(results.body.job_id, id.B);
    assert.equal(results.body.results.length, 1);
    const [a] = results.body.results;
    assert.deepEqual({ ...a, completed_at: typeof a.completed_at }, {
      job_id: id.A, key: 'A', queue_name: 'http-continue', status: 'deadletter', result: null, error: 'upstream 503',
      completed_at: 'string', dependency_type: 'completion', on_parent_failure: 'continue',
    });
    await worker.complete(b!, { rows: 0 });
    const forC = (await server.request('GET', `/api/v1/jobs/${id.C}/dependencies/results`)).body.results;
    assert.deepEqual(forC.map((r: { status: string; result: unknown; error: unknown }) => [r.status, r.result, r.error]), [['completed', { rows: 0 }, null]]);
  });

  it('block (the default): B waits; a retry of A that completes releases it', async () => {
    const { id } = await createWorkflow(chain('http-block'));
    await failOnly('http-block', 'first try');
    assert.deepEqual(await worker.claim('http-block', 5), []);
    assert.equal(await statusOf(id.B!), 'pending');
    const retried = await server.request('POST', `/api/v1/jobs/${id.A}/retry`);
    assert.equal(retried.status, 200, retried.text);
    const [again] = await worker.claim('http-block', 5);
    assert.equal(again?.id, id.A);
    await worker.complete(again!);
    assert.deepEqual((await worker.claim('http-block', 5)).map((j) => j.id), [id.B]);
  });

  it('per job and per dependency key over the workflow default; bad values are 400 naming the field', async () => {
    const q = 'http-override';
    const { id } = await createWorkflow({
      name: 'overrides',
      on_parent_failure: 'cancel',
      jobs: [
        { key: 'A', queue_name: q, payload: {}, max_retries: 0 },
        { key: 'Z', queue_name: q, payload: {} },
        { key: 'dflt', queue_name: q, payload: {}, depends_on: ['A'] },
        { key: 'own', queue_name: q, payload: {}, depends_on: ['A'], on_parent_failure: 'block' },
        { key: 'per_key', queue_name: q, payload: {}, depends_on: ['A', 'Z'], on_parent_failure: { A: 'continue' } },
      ],
    });
    await failOnly(q, 'no');
    assert.deepEqual([await statusOf(id.dflt!), await statusOf(id.own!), await statusOf(id.per_key!)], ['cancelled', 'pending', 'pending']);
    const [z] = await worker.claim(q, 1);
    assert.equal(z?.id, id.Z);
    await worker.complete(z!);
    assert.deepEqual((await worker.claim(q, 5)).map((j) => j.id), [id.per_key]);

    const bad = async (body: Record<string, unknown>, message: RegExp) => {
      const answer = await server.request('POST', '/api/v1/workflows', { body });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.body.message, message);
    };
    const jobs = [{ key: 'A', queue_name: q, payload: {} }];
    await bad({ name: 'bad', on_parent_failure: 'skip', jobs }, /on_parent_failure must be one of block, cancel, continue/);
    await bad({ name: 'bad', jobs: [...jobs, { key: 'B', queue_name: q, payload: {}, depends_on: ['A'], on_parent_failure: 'later' }] }, /jobs\[1\]\.on_parent_failure must be one of block, cancel, continue/);
    await bad({ name: 'bad', jobs: [...jobs, { key: 'B', queue_name: q, payload: {}, on_parent_failure: { A: 'cancel' } }] }, /jobs\[1\]\.on_parent_failure names "A", which is not in its depends_on/);
    await bad({ name: 'bad', jobs: [...jobs, { key: 'B', queue_name: q, payload: {}, depends_on: ['A'], on_parent_failure: { A: 'stop' } }] }, /jobs\[1\]\.on_parent_failure\.A must be one of/);
    await bad({ name: 'bad', jobs: [...jobs, { key: 'B', queue_name: q, payload: {}, depends_on: ['A'], on_parent_failure: 3 }] }, /on_parent_failure/);
  });
});

describe('dependencies API', () => {
  async function createJob(queue: string, extra: Record<string, unknown> = {}): Promise<string> {
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {}, ...extra } });
    assert.equal(created.status, 201, created.text);
    return created.body.id;
  }

  it('stores on_parent_failure per added edge and shows it; cancel on a failed dependency cancels at once', async () => {
    const parent = await createJob('deps-policy-parent', { max_retries: 0 });
    const child = await createJob('deps-policy-child');
    const added = await server.request('POST', `/api/v1/jobs/${child}/dependencies`, { body: { depends_on_job_ids: [parent], on_parent_failure: 'continue' } });
    assert.equal(added.status, 200, added.text);
    assert.equal(added.body.dependencies[0].on_parent_failure, 'continue');
    assert.equal(added.body.status, 'pending');
    const view = await server.request('GET', `/api/v1/jobs/${child}/dependencies`);
    assert.equal(view.body.dependencies[0].on_parent_failure, 'continue');
    const parentView = await server.request('GET', `/api/v1/jobs/${parent}/dependencies`);
    assert.equal(parentView.body.dependents[0].on_parent_failure, 'continue');

    await failOnly('deps-policy-parent', 'gone');
    assert.deepEqual((await worker.claim('deps-policy-child', 1)).map((j) => j.id), [child]);
    const late = await createJob('deps-policy-late');
    const cancelled = await server.request('POST', `/api/v1/jobs/${late}/dependencies`, { body: { depends_on: [parent], on_parent_failure: 'cancel' } });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(await statusOf(late), 'cancelled');

    const bad = await server.request('POST', `/api/v1/jobs/${child}/dependencies`, { body: { depends_on: [parent], on_parent_failure: 'maybe' } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /on_parent_failure must be one of block, cancel, continue/);
  });

  it('answers the results to worker and read-only keys, scoped to the key\'s queues; 404 and 400 where due', async () => {
    const shown = await createJob('results-shown', { max_retries: 0 });
    const hidden = await createJob('results-hidden');
    const child = await createJob('results-shown');
    for (const dep of [shown, hidden]) {
      const added = await server.request('POST', `/api/v1/jobs/${child}/dependencies`, { body: { depends_on: [dep], on_parent_failure: 'continue' } });
      assert.equal(added.status, 200, added.text);
    }
    const keyFor = async (body: Record<string, unknown>) => {
      const created = await server.request('POST', '/api/v1/api-keys', { body: { name: 'results', ...body } });
      assert.equal(created.status, 201, created.text);
      return created.body.key as string;
    };
    const all = (await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`)).body.results;
    assert.deepEqual(all.map((r: { job_id: string }) => r.job_id), [shown, hidden]);
    for (const role of ['worker', 'read_only', 'producer']) {
      const answer = await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`, { auth: await keyFor({ role }) });
      assert.equal(answer.status, 200, `${role}: ${answer.text}`);
      assert.equal(answer.body.results.length, 2);
    }
    const scoped = await keyFor({ role: 'worker', queues: ['results-shown'] });
    const seen = await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`, { auth: scoped });
    assert.deepEqual(seen.body.results.map((r: { job_id: string }) => r.job_id), [shown], 'the other queue\'s dependency is left out');
    assert.equal(seen.text.includes('results-hidden'), false);
    assert.equal((await server.request('GET', `/api/v1/jobs/${hidden}/dependencies/results`, { auth: scoped })).status, 404);
    const paged = await server.request('GET', `/api/v1/jobs/${child}/dependencies/results?limit=1&offset=1`);
    assert.deepEqual(paged.body.results.map((r: { job_id: string }) => r.job_id), [hidden]);
    const badLimit = await server.request('GET', `/api/v1/jobs/${child}/dependencies/results?limit=0`);
    assert.equal(badLimit.status, 400);
    assert.match(badLimit.body.message, /limit must be an integer from 1 to 100/);
    assert.equal((await server.request('GET', '/api/v1/jobs/00000000-0000-4000-8000-000000000000/dependencies/results')).status, 404);
    assert.equal((await server.request('GET', '/api/v1/jobs/nope/dependencies/results')).status, 404);
    assert.deepEqual((await server.request('GET', `/api/v1/jobs/${shown}/dependencies/results`)).body, { job_id: shown, results: [] });
    const other = await server.createOrganization();
    assert.equal((await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`, { auth: other.apiKey })).status, 404);

    // A dependency whose row is gone (retention, DLQ purge): named with a null status to a key with every queue.
    await server.database.pool.query('DELETE FROM spool.jobs WHERE id = $1', [hidden]);
    const gone = await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`);
    assert.equal(gone.status, 200, gone.text);
    assert.deepEqual(gone.body.results[1], {
      job_id: hidden, key: null, queue_name: null, status: null, result: null, error: null, completed_at: null,
      dependency_type: 'completion', on_parent_failure: 'continue',
    });
    assert.equal((await server.request('GET', `/api/v1/jobs/${child}/dependencies/results`, { auth: scoped })).body.results.length, 1);
  });
});
