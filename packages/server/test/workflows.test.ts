import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { httpWorker, type HttpWorker } from '../../../test-support/worker.js';

let server: TestServer;
let worker: HttpWorker;
before(async () => {
  server = await startTestServer('workflows');
  worker = httpWorker(server);
});
after(async () => server.close());

async function createDiamond(queue: string, modeOfD: 'all' | 'any' = 'all', maxRetries = 3) {
  const created = await server.request('POST', '/api/v1/workflows', {
    body: {
      name: `Diamond (${queue})`,
      description: 'A then B and C then D',
      metadata: { CaseKept: true },
      jobs: [
        { key: 'A', queue_name: queue, payload: { step: 'A' } },
        { key: 'B', queue_name: queue, payload: { step: 'B' }, depends_on: ['A'], max_retries: maxRetries },
        { key: 'C', queue_name: queue, payload: { step: 'C' }, depends_on: ['A'] },
        { key: 'D', queue_name: queue, payload: { step: 'D' }, depends_on: ['B', 'C'], dependency_mode: modeOfD },
      ],
    },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.status, 'pending');
  assert.deepEqual(created.body.job_ids.map((j: { key: string }) => j.key), ['A', 'B', 'C', 'D']);
  const id = Object.fromEntries(created.body.job_ids.map((j: { key: string; job_id: string }) => [j.key, j.job_id])) as Record<'A' | 'B' | 'C' | 'D', string>;
  return { workflowId: created.body.workflow_id as string, id };
}

describe('POST /api/v1/workflows', () => {
  it('runs A → {B, C} → D in dependency order and reads completed with full counters at once', async () => {
    const { workflowId, id } = await createDiamond('wf-diamond');
    const order: string[] = [];
    for (;;) {
      const jobs = await worker.claim('wf-diamond', 10);
      if (jobs.length === 0) break;
      for (const job of jobs) {
        order.push(job.payload.step);
        await worker.complete(job);
      }
    }
    assert.equal(order[0], 'A');
    assert.deepEqual(order.slice(1, 3).sort(), ['B', 'C']);
    assert.equal(order[3], 'D');
    const workflow = await server.request('GET', `/api/v1/workflows/${workflowId}`);
    assert.equal(workflow.status, 200);
    assert.equal(workflow.body.status, 'completed');
    assert.equal(workflow.body.total_jobs, 4);
    assert.equal(workflow.body.completed_jobs, 4);
    assert.equal(workflow.body.failed_jobs, 0);
    assert.equal(workflow.body.progress_percent, 100);
    assert.ok(workflow.body.completed_at);
    assert.ok(workflow.body.started_at);
    assert.deepEqual(workflow.body.metadata, { CaseKept: true });
    const d = await server.request('GET', `/api/v1/jobs/${id.D}`);
    assert.equal(d.body.workflow_id, workflowId);
    assert.equal(d.body.dependency_mode, 'all');
    assert.equal(d.body.dependencies_met, true);
  });

  it('refuses cycles, unknown keys and duplicate keys with 400', async () => {
    const cycle = await server.request('POST', '/api/v1/workflows', {
      body: { name: 'cycle', jobs: [{ key: 'a', queue_name: 'q', payload: {}, depends_on: ['b'] }, { key: 'b', queue_name: 'q', payload: {}, depends_on: ['a'] }] },
    });
    assert.equal(cycle.status, 400);
    assert.match(cycle.body.message, /cycle/);
    const unknown = await server.request('POST', '/api/v1/workflows', { body: { name: 'unknown', jobs: [{ key: 'a', queue_name: 'q', payload: {}, depends_on: ['nope'] }] } });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /nope/);
    const duplicate = await server.request('POST', '/api/v1/workflows', { body: { name: 'dup', jobs: [{ key: 'a', queue_name: 'q', payload: {} }, { key: 'a', queue_name: 'q', payload: {} }] } });
    assert.equal(duplicate.status, 400);
    const badMode = await server.request('POST', '/api/v1/workflows', { body: { name: 'mode', jobs: [{ key: 'a', queue_name: 'q', payload: {}, dependency_mode: 'some' }] } });
    assert.equal(badMode.status, 400);
    assert.match(badMode.body.message, /dependency_mode/);
    const empty = await server.request('POST', '/api/v1/workflows', { body: { name: 'empty', jobs: [] } });
    assert.equal(empty.status, 400);
    assert.equal((await server.request('GET', '/api/v1/workflows?status=pending')).body.filter((w: { name: string }) => ['cycle', 'unknown', 'dup'].includes(w.name)).length, 0);
  });

  it("releases a mode 'any' job when its first dependency completes", async () => {
    await createDiamond('wf-any', 'any');
    const [a] = await worker.claim('wf-any', 10);
    await worker.complete(a!);
    const bc = await worker.claim('wf-any', 10);
    await worker.complete(bc.find((job) => job.payload.step === 'B')!);
    const next = await worker.claim('wf-any', 10);
    assert.deepEqual(next.map((job) => job.payload.step), ['D']);
  });
});

describe('failure, cancel and retry', () => {
  it('never runs dependents of a dead-lettered job, fails the workflow, and retries it', async () => {
    const { workflowId, id } = await createDiamond('wf-dead', 'all', 0);
    await worker.complete((await worker.claim('wf-dead', 10))[0]!);
    for (const job of await worker.claim('wf-dead', 10)) {
      if (job.payload.step === 'B') await worker.fail(job, 'boom');
      else await worker.complete(job);
    }
    assert.deepEqual(await worker.claim('wf-dead', 10), [], 'D is not claimable');
    const dJob = await server.request('GET', `/api/v1/jobs/${id.D}`);
    assert.equal(dJob.body.status, 'pending');
    assert.equal(dJob.body.dependencies_met, false);
    const failed = await server.request('GET', `/api/v1/workflows/${workflowId}`);
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.failed_jobs, 1);
    assert.equal(failed.body.completed_jobs, 2);
    assert.equal(failed.body.progress_percent, 50);

    const retried = await server.request('POST', `/api/v1/workflows/${workflowId}/retry`, { rawBody: '' });
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.status, 'running');
    const again = await worker.claim('wf-dead', 10);
    assert.deepEqual(again.map((job) => job.payload.step), ['B']);
    await worker.complete(again[0]!);
    await worker.complete((await worker.claim('wf-dead', 10))[0]!);
    assert.equal((await server.request('GET', `/api/v1/workflows/${workflowId}`)).body.status, 'completed');
  });

  it('answers a retry of a workflow that is not failed with 400 mentioning "failed"', async () => {
    const { workflowId } = await createDiamond('wf-noretry');
    const response = await server.request('POST', `/api/v1/workflows/${workflowId}/retry`);
    assert.equal(response.status, 400);
    assert.match(response.body.message, /failed/);
  });

  it('cancels a workflow and its unfinished jobs', async () => {
    const { workflowId, id } = await createDiamond('wf-cancel');
    await worker.complete((await worker.claim('wf-cancel', 10))[0]!);
    const cancelled = await server.request('POST', `/api/v1/workflows/${workflowId}/cancel`, { rawBody: '' });
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(cancelled.body.completed_jobs, 1);
    assert.ok(cancelled.body.completed_at);
    for (const key of ['B', 'C', 'D'] as const) assert.equal((await server.request('GET', `/api/v1/jobs/${id[key]}`)).body.status, 'cancelled');
    assert.deepEqual(await worker.claim('wf-cancel', 10), []);
    assert.equal((await server.request('POST', `/api/v1/workflows/${workflowId}/retry`)).status, 400);
  });
});

describe('workflow reads', () => {
  it('lists workflows, their jobs and job statuses; unknown ids are 404', async () => {
    const { workflowId, id } = await createDiamond('wf-reads');
    const list = await server.request('GET', '/api/v1/workflows?limit=500');
    assert.equal(list.status, 200);
    assert.ok(list.body.some((w: { id: string }) => w.id === workflowId));
    const pending = await server.request('GET', '/api/v1/workflows?status=pending');
    assert.ok(pending.body.every((w: { status: string }) => w.status === 'pending'));

    const jobs = await server.request('GET', `/api/v1/workflows/${workflowId}/jobs`);
    assert.equal(jobs.status, 200);
    assert.deepEqual(jobs.body.map((j: { key: string }) => j.key), ['A', 'B', 'C', 'D']);
    const d = jobs.body[3];
    assert.deepEqual([...d.depends_on].sort(), [id.B, id.C].sort());
    for (const key of ['id', 'workflow_id', 'queue_name', 'status', 'payload', 'result', 'error', 'priority', 'max_retries', 'attempt', 'timeout_seconds', 'created_at', 'started_at', 'completed_at']) {
      assert.ok(key in d, `${key} is present`);
    }
    const statuses = await server.request('GET', `/api/v1/workflows/${workflowId}/jobs/status`);
    assert.deepEqual(statuses.body.map((s: { key: string; status: string }) => [s.key, s.status]), [['A', 'pending'], ['B', 'pending'], ['C', 'pending'], ['D', 'pending']]);
    const one = await server.request('GET', `/api/v1/workflows/${workflowId}/jobs/${id.B}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.key, 'B');

    await worker.claim('wf-reads', 1);
    const detail = (await server.request('GET', `/api/v1/workflows/${workflowId}`)).body;
    assert.equal(detail.status, 'running');
    // What the official Spooled dashboard's workflow page reads, beside the counters.
    assert.deepEqual(detail.jobs.map((j: { key: string }) => j.key), ['A', 'B', 'C', 'D']);
    const edge = (parent: keyof typeof id, child: keyof typeof id) => ({ parent_job_id: id[parent], child_job_id: id[child], dependency_type: 'completion', on_parent_failure: 'block' });
    const byPair = (e: { parent_job_id: string; child_job_id: string }) => `${e.parent_job_id}>${e.child_job_id}`;
    assert.deepEqual([...detail.dependencies].sort((a, b) => byPair(a).localeCompare(byPair(b))), [edge('A', 'B'), edge('A', 'C'), edge('B', 'D'), edge('C', 'D')].sort((a, b) => byPair(a).localeCompare(byPair(b))));
    assert.deepEqual(detail.progress, { total: 4, completed: 0, failed: 0, pending: 3, processing: 1 });

    assert.equal((await server.request('GET', '/api/v1/workflows/not-a-uuid')).status, 404);
    assert.equal((await server.request('GET', '/api/v1/workflows/00000000-0000-4000-8000-000000000000/jobs')).status, 404);
    assert.equal((await server.request('GET', `/api/v1/workflows/${workflowId}/jobs/not-a-job`)).status, 404);
    const other = await server.createOrganization();
    assert.equal((await server.request('GET', `/api/v1/workflows/${workflowId}`, { auth: other.apiKey })).status, 404);
  });
});

describe('job dependencies', () => {
  async function createJob(queue: string): Promise<string> {
    return (await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {} } })).body.id;
  }

  it('adds dependencies (SDK and backend spellings), skipping self and cycle-closing edges', async () => {
    const parent = await createJob('deps-parent');
    const child = await createJob('deps-child');
    const added = await server.request('POST', `/api/v1/jobs/${child}/dependencies`, { body: { depends_on_job_ids: [parent, child] } });
    assert.equal(added.status, 200, added.text);
    assert.equal(added.body.added, 1);
    assert.equal(added.body.dependencies_added, 1);
    assert.equal(added.body.dependencies_met, false);
    assert.deepEqual(added.body.dependencies, [{ job_id: child, depends_on_job_id: parent, dependency_type: 'completion', on_parent_failure: 'block' }]);
    const cycle = await server.request('POST', `/api/v1/jobs/${parent}/dependencies`, { body: { depends_on: [child], dependency_mode: 'any' } });
    assert.equal(cycle.status, 200);
    assert.equal(cycle.body.added, 0);

    const view = await server.request('GET', `/api/v1/jobs/${child}/dependencies`);
    assert.equal(view.status, 200);
    assert.equal(view.body.dependencies_met, false);
    assert.deepEqual(view.body.dependencies, [{ job_id: parent, queue_name: 'deps-parent', status: 'pending', dependency_type: 'completion', on_parent_failure: 'block' }]);
    const parentView = await server.request('GET', `/api/v1/jobs/${parent}/dependencies`);
    assert.deepEqual(parentView.body.dependents.map((d: { job_id: string }) => d.job_id), [child]);

    assert.deepEqual(await worker.claim('deps-child', 1), []);
    await worker.complete((await worker.claim('deps-parent', 1))[0]!);
    assert.equal((await worker.claim('deps-child', 1)).length, 1);
  });

  it('answers unknown jobs and dependencies with 404 and a missing list with 400', async () => {
    const job = await createJob('deps-404');
    assert.equal((await server.request('GET', '/api/v1/jobs/nope/dependencies')).status, 404);
    assert.equal((await server.request('POST', `/api/v1/jobs/${job}/dependencies`, { body: { depends_on_job_ids: ['00000000-0000-4000-8000-000000000000'] } })).status, 404);
    assert.equal((await server.request('POST', '/api/v1/jobs/nope/dependencies', { body: { depends_on_job_ids: [job] } })).status, 404);
    const missing = await server.request('POST', `/api/v1/jobs/${job}/dependencies`, { body: {} });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /depends_on_job_ids/);
  });
});
