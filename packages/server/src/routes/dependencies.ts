import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError, ValidationError } from '@spool/protocol';
import { jobDependenciesAddTx, jobDependenciesGet, jobDependencyResults } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { extensionInt } from '../http/warnings.js';
import { IdParams } from '../wire/common.js';
import { OnParentFailure } from './workflows.js';

/** Results per answer: each may hold up to 1 MiB of JSON. */
const RESULTS_MAX = 100;

const JobIdList = Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 100 });

/** Both spellings are accepted: the SDK's and the Dec-2025 backend's (docs/compatibility.md §3.10). */
const AddDependenciesBody = Type.Object({
  depends_on_job_ids: Type.Optional(JobIdList),
  dependency_type: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  depends_on: Type.Optional(JobIdList),
  dependency_mode: Type.Optional(Type.Unsafe<'all' | 'any'>({ type: 'string', enum: ['all', 'any'] })),
  on_parent_failure: Type.Optional(OnParentFailure),
});

interface AddDependenciesBody {
  depends_on_job_ids?: string[];
  dependency_type?: string;
  depends_on?: string[];
  dependency_mode?: 'all' | 'any';
  on_parent_failure?: 'block' | 'cancel' | 'continue';
}

const Nullable = (schema: Parameters<typeof Type.Union>[0][number]) => Type.Union([schema, Type.Null()]);
const Policy = Type.String({ description: 'extension: block, cancel or continue (docs/workflows.md, "When a parent fails")' });

const Edge = Type.Object({
  job_id: Type.String(),
  queue_name: Nullable(Type.String()),
  status: Nullable(Type.String()),
  dependency_type: Type.String(),
  on_parent_failure: Policy,
});

const DependencyResult = Type.Object({
  job_id: Type.String(),
  key: Nullable(Type.String({ description: "the dependency's key in its workflow" })),
  queue_name: Nullable(Type.String()),
  status: Nullable(Type.String({ description: 'null (and queue_name null): the job no longer exists (retention, DLQ purge); shown only to keys with every queue' })),
  result: Type.Unknown({ description: 'what it completed with (null until it has)' }),
  error: Nullable(Type.String({ description: 'its last error, when it has not completed (why it failed, was cancelled or expired)' })),
  completed_at: Nullable(Type.String({ format: 'date-time', description: 'when it ended, whichever way' })),
  dependency_type: Type.String(),
  on_parent_failure: Policy,
});

/** docs/compatibility.md §3.10: GET/POST /jobs/{id}/dependencies. */
export function dependencyRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { id: string } }>('/jobs/:id/dependencies', {
    config: { operation: 'job.read', addresses: 'job' },
    schema: {
      tags: ['workflows'],
      summary: "A job's dependencies and dependents",
      params: IdParams,
      response: {
        200: Type.Object({
          job_id: Type.String(),
          status: Type.String(),
          dependencies_met: Type.Boolean(),
          dependency_mode: Type.Union([Type.String(), Type.Null()]),
          dependencies: Type.Array(Edge),
          dependents: Type.Array(Edge),
        }),
      },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const view = await jobDependenciesGet(ctx.db, grant.organizationId, request.params.id);
    if (!view) throw new NotFoundError('Job not found');
    // Edges to jobs of other queues are not the key's to see.
    const visible = (edge: { queue_name: string | null }) => edge.queue_name !== null && grant.allows(edge.queue_name);
    return grant.unrestricted ? view : { ...view, dependencies: view.dependencies.filter(visible), dependents: view.dependents.filter(visible) };
  });

  app.post<{ Params: { id: string }; Body: AddDependenciesBody }>('/jobs/:id/dependencies', {
    config: { operation: 'job.add_dependencies', addresses: 'job' },
    schema: {
      tags: ['workflows'],
      summary: 'Make a pending job depend on other jobs (self and cycle-closing edges are skipped)',
      description: 'on_parent_failure (extension, default block) is stored on each new edge; existing edges keep theirs. It holds for a '
        + 'dependency that has already failed too: continue counts it as satisfied at once, cancel cancels the job at once (status in the answer).',
      params: IdParams,
      body: AddDependenciesBody,
    },
  }, async (request) => {
    const body = request.body;
    const ids = body.depends_on_job_ids ?? body.depends_on;
    if (!ids) throw new ValidationError('depends_on_job_ids is required', { field: 'depends_on_job_ids' });
    const grant = grantOf(request);
    const [outOfReach] = await grant.jobsOutOfReach(ctx.db, ids);
    if (outOfReach) throw new NotFoundError('Job not found', { job_id: outOfReach });
    const result = await jobDependenciesAddTx(ctx.db, {
      organizationId: grant.organizationId,
      jobId: request.params.id,
      dependsOn: ids,
      dependencyType: body.dependency_type ?? 'completion',
      dependencyMode: body.dependency_mode ?? null,
      onParentFailure: body.on_parent_failure ?? 'block',
    });
    return {
      added: result.added.length,
      dependencies: result.added,
      dependencies_added: result.added.length,
      dependencies_met: result.dependenciesMet,
      status: result.status,
    };
  });

  app.get<{ Params: { id: string }; Querystring: { limit?: string; offset?: string } }>('/jobs/:id/dependencies/results', {
    config: { operation: 'job.dependency_results', addresses: 'job' },
    schema: {
      tags: ['workflows'],
      summary: "Extension: what a job's dependencies ended with (status, result, error)",
      description: 'For the handler of a dependent job (SDK ctx.dependencyResults()) or anyone reading the job: each dependency, in the '
        + 'order the edges were added, with its status, result, last error when it did not complete, and the edge\'s on_parent_failure '
        + '(a job that runs after a failed dependency through continue sees here how it failed). Dependencies of queues the key may not '
        + 'use are left out. Readable by keys that read jobs and by worker keys.',
      params: IdParams,
      querystring: Type.Object({
        limit: Type.Optional(Type.String({ description: 'an integer from 1 to 100, default 100' })),
        offset: Type.Optional(Type.String({ description: 'dependencies to skip, default 0' })),
      }),
      response: { 200: Type.Object({ job_id: Type.String(), results: Type.Array(DependencyResult) }) },
    },
  }, async (request) => {
    const grant = grantOf(request);
    const rows = await jobDependencyResults(ctx.db, {
      organizationId: grant.organizationId,
      jobId: request.params.id,
      queues: grant.queueFilter,
      limit: extensionInt('limit', request.query.limit, RESULTS_MAX, 1, RESULTS_MAX),
      offset: extensionInt('offset', request.query.offset, 0, 0, 1_000_000),
    });
    if (!rows) throw new NotFoundError('Job not found');
    return {
      job_id: request.params.id,
      results: rows.map((row) => ({ ...row, completed_at: row.completed_at === null ? null : row.completed_at.toISOString() })),
    };
  });
}
