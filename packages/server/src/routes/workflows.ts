import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError } from '@spool/protocol';
import { workflowCancel, workflowCreate, workflowGet, workflowJobs, workflowList, workflowRetry, workflowTopologicalOrder } from '@spool/engine';
import type { AppContext } from '../app.js';
import type { Grant } from '../authorization.js';
import { actorOf } from '../http/auth.js';
import { grantOf } from '../http/route-authorization.js';
import { contractChoice, contractInt } from '../http/warnings.js';
import { withinPlanLimit } from '../http/plan-limits.js';
import { IdParams, MaxRetries, Priority, QueueName, TimeoutSeconds, nullable } from '../wire/common.js';
import { WorkflowDetailSchema, WorkflowJobSchema, WorkflowSchema, workflowDetailToWire, workflowJobToWire, workflowToWire } from '../wire/workflow.js';
import { checkJobLimits } from './jobs.js';

const DependencyMode = Type.Unsafe<'all' | 'any'>({ type: 'string', enum: ['all', 'any'] });

type Policy = 'block' | 'cancel' | 'continue';

/** The workflow's default for its edges (docs/workflows.md, "When a parent fails"). */
export const OnParentFailure = Type.Unsafe<Policy>({
  type: 'string',
  enum: ['block', 'cancel', 'continue'],
  description: "extension: what a dependency's final failure (dead-lettered, failed, cancelled or expired) does to the job that depends on it. "
    + '`block` (default): it waits, and runs if the dependency is retried and completes; `cancel`: it is cancelled at once, and its own '
    + 'dependents follow their edges; `continue`: the edge counts as satisfied, the job runs once all its edges are, and reads how the '
    + 'dependency ended from GET /jobs/{id}/dependencies/results.',
});

/**
 * A job's own choice: one policy for all its edges, or one per dependency
 * key. The values are checked with the graph (workflowTopologicalOrder),
 * which names the field and the key.
 */
const JobOnParentFailure = Type.Union([
  Type.String({ maxLength: 20 }),
  Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 20 }), { maxProperties: 100 }),
], {
  description: 'extension: on_parent_failure for this job\'s edges (block, cancel or continue), either one for all of them or an object '
    + 'naming some of its depends_on keys, e.g. {"extract": "continue"}; edges it does not name take the workflow\'s on_parent_failure.',
});

const WorkflowJobBody = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' }),
  queue_name: QueueName,
  payload: Type.Unknown(),
  depends_on: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100 })),
  dependency_mode: Type.Optional(DependencyMode),
  on_parent_failure: Type.Optional(JobOnParentFailure),
  priority: Type.Optional(Priority),
  max_retries: Type.Optional(MaxRetries),
  timeout_seconds: Type.Optional(TimeoutSeconds),
});

const CreateWorkflowBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9 _.()-]+$' }),
  description: Type.Optional(nullable(Type.String({ maxLength: 1000 }))),
  jobs: Type.Array(WorkflowJobBody, { minItems: 1, maxItems: 100 }),
  metadata: Type.Optional(Type.Unknown()),
  on_parent_failure: Type.Optional(OnParentFailure),
});

interface CreateWorkflowBody {
  name: string;
  description?: string | null;
  metadata?: unknown;
  on_parent_failure?: Policy;
  jobs: {
    key: string;
    queue_name: string;
    payload: unknown;
    depends_on?: string[];
    dependency_mode?: 'all' | 'any';
    on_parent_failure?: Policy | Record<string, Policy>;
    priority?: number;
    max_retries?: number;
    timeout_seconds?: number;
  }[];
}

const WORKFLOW_STATUSES = new Set(['pending', 'running', 'completed', 'failed', 'cancelled']);
const JobParams = Type.Object({ id: Type.String(), job_id: Type.String() });

/** A workflow within the key's reach (any of its queues to read it, all to change it), else 404. */
async function loadWorkflow(ctx: AppContext, grant: Grant, id: string) {
  return grant.object(await workflowGet(ctx.db, grant.organizationId, id), (w) => w.queue_names, () => new NotFoundError('Workflow not found'));
}

/** docs/compatibility.md §3.10: workflows (DAGs of jobs). Semantics in docs/workflows.md. */
export function workflowRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: CreateWorkflowBody }>('/workflows', {
    config: { operation: 'workflow.create' },
    schema: {
      tags: ['workflows'],
      summary: 'Create a workflow: jobs with keys and depends_on (cycles and unknown keys are 400)',
      description: 'Each depends_on entry is an edge. What a dependency\'s final failure does to its dependents is on_parent_failure '
        + '(extension): the workflow\'s default for its edges, overridden per job or per dependency key (docs/workflows.md, "When a parent fails").',
      body: CreateWorkflowBody,
    },
  }, async (request, reply) => {
    const grant = grantOf(request);
    const auth = grant.auth;
    const body = request.body;
    const admissions = body.jobs.map((job, index) => {
      const payloadBytes = checkJobLimits(job, `jobs[${index}].`);
      grant.queue(job.queue_name);
      return { queueName: job.queue_name, payloadBytes };
    });
    // The graph is part of validation, which comes before plan limits (docs/compatibility.md §1.4).
    workflowTopologicalOrder(body.jobs.map((job) => ({ key: job.key, dependsOn: job.depends_on ?? [], onParentFailure: job.on_parent_failure })));
    // The workflow counts against max_workflows and its jobs against the job
    // limits, checked together in the transaction that creates them.
    const payloadBytes = admissions.reduce((max, job) => Math.max(max, job.payloadBytes), 0);
    const created = await withinPlanLimit(ctx, auth, 'workflows', (db) => workflowCreate(db, {
      organizationId: auth.organizationId,
      name: body.name,
      description: body.description ?? null,
      metadata: body.metadata,
      onParentFailure: body.on_parent_failure,
      jobs: body.jobs.map((job) => ({
        key: job.key,
        queueName: job.queue_name,
        payload: job.payload,
        dependsOn: job.depends_on ?? [],
        dependencyMode: job.dependency_mode ?? 'all',
        onParentFailure: job.on_parent_failure,
        priority: job.priority,
        maxRetries: job.max_retries,
        timeoutSeconds: job.timeout_seconds,
      })),
    }), { jobs: { count: admissions.length, payloadBytes } });
    return reply.code(201).send({
      workflow_id: created.workflowId,
      job_ids: created.jobIds.map((j) => ({ key: j.key, job_id: j.jobId })),
      status: 'pending',
    });
  });

  app.get<{ Querystring: { status?: string; limit?: number; offset?: number } }>('/workflows', {
    config: { operation: 'workflow.read' },
    schema: {
      tags: ['workflows'],
      summary: 'List workflows, newest first',
      querystring: Type.Object({ status: Type.Optional(Type.String()), limit: Type.Optional(Type.Integer()), offset: Type.Optional(Type.Integer()) }),
      response: { 200: Type.Array(WorkflowSchema) },
    },
  }, async (request, reply) => {
    const { status, limit, offset } = request.query;
    const grant = grantOf(request);
    const rows = await workflowList(ctx.db, {
      organizationId: grant.organizationId,
      queues: grant.queueFilter,
      status: contractChoice(reply, 'status', status, [...WORKFLOW_STATUSES]),
      limit: contractInt(reply, 'limit', limit, 50, 1, 100),
      offset: contractInt(reply, 'offset', offset, 0, 0, Number.MAX_SAFE_INTEGER),
    });
    return rows.map(workflowToWire);
  });

  app.get<{ Params: { id: string } }>('/workflows/:id', {
    config: { operation: 'workflow.read' },
    schema: { tags: ['workflows'], summary: 'Get a workflow with counters and progress, its jobs and their dependencies', params: IdParams, response: { 200: WorkflowDetailSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const workflow = await loadWorkflow(ctx, grant, request.params.id);
    const jobs = await workflowJobs(ctx.db, grant.organizationId, workflow.id);
    // As GET /workflows/{id}/jobs: only the jobs of the key's queues; the counts cover the whole workflow like total_jobs.
    return workflowDetailToWire(workflow, jobs, (job) => grant.allows(job.queue_name));
  });

  app.post<{ Params: { id: string } }>('/workflows/:id/cancel', {
    config: { operation: 'workflow.manage' },
    schema: { tags: ['workflows'], summary: 'Cancel a workflow and its unfinished jobs', params: IdParams, response: { 200: WorkflowSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    await loadWorkflow(ctx, grant, request.params.id);
    return workflowToWire(await workflowCancel(ctx.db, grant.organizationId, request.params.id, actorOf(grant.auth)));
  });

  app.post<{ Params: { id: string } }>('/workflows/:id/retry', {
    config: { operation: 'workflow.manage' },
    schema: { tags: ['workflows'], summary: 'Retry the failed jobs of a failed workflow (400 otherwise)', params: IdParams, response: { 200: WorkflowSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    await loadWorkflow(ctx, grant, request.params.id);
    return workflowToWire(await workflowRetry(ctx.db, grant.organizationId, request.params.id, actorOf(grant.auth)));
  });

  app.get<{ Params: { id: string } }>('/workflows/:id/jobs', {
    config: { operation: 'workflow.read' },
    schema: { tags: ['workflows'], summary: "A workflow's jobs", params: IdParams, response: { 200: Type.Array(WorkflowJobSchema) } },
  }, async (request) => {
    const grant = grantOf(request);
    await loadWorkflow(ctx, grant, request.params.id);
    // Visible workflow, but only the jobs of the key's queues: the others' payloads are not the key's to read.
    return (await workflowJobs(ctx.db, grant.organizationId, request.params.id)).filter((job) => grant.allows(job.queue_name)).map(workflowJobToWire);
  });

  app.get<{ Params: { id: string } }>('/workflows/:id/jobs/status', {
    config: { operation: 'workflow.read' },
    schema: {
      tags: ['workflows'],
      summary: "Status of each of a workflow's jobs",
      params: IdParams,
      response: { 200: Type.Array(Type.Object({ job_id: Type.String(), key: Type.Union([Type.String(), Type.Null()]), status: Type.String(), progress: Type.Number() })) },
    },
  }, async (request) => {
    const grant = grantOf(request);
    await loadWorkflow(ctx, grant, request.params.id);
    const jobs = (await workflowJobs(ctx.db, grant.organizationId, request.params.id)).filter((job) => grant.allows(job.queue_name));
    return jobs.map((job) => ({ job_id: job.id, key: job.key, status: job.status, progress: job.status === 'completed' ? 100 : 0 }));
  });

  app.get<{ Params: { id: string; job_id: string } }>('/workflows/:id/jobs/:job_id', {
    config: { operation: 'workflow.read' },
    schema: { tags: ['workflows'], summary: 'One job of a workflow', params: JobParams, response: { 200: WorkflowJobSchema } },
  }, async (request) => {
    const grant = grantOf(request);
    const [job] = await workflowJobs(ctx.db, grant.organizationId, request.params.id, request.params.job_id);
    if (!job || !grant.allows(job.queue_name)) throw new NotFoundError('Workflow job not found');
    return workflowJobToWire(job);
  });
}
