import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError, ValidationError } from '@spool/protocol';
import { jobDependenciesAddTx, jobDependenciesGet } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { IdParams } from '../wire/common.js';

const JobIdList = Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 100 });

/** Both spellings are accepted: the SDK's and the Dec-2025 backend's (docs/compatibility.md §3.10). */
const AddDependenciesBody = Type.Object({
  depends_on_job_ids: Type.Optional(JobIdList),
  dependency_type: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  depends_on: Type.Optional(JobIdList),
  dependency_mode: Type.Optional(Type.Unsafe<'all' | 'any'>({ type: 'string', enum: ['all', 'any'] })),
});

interface AddDependenciesBody {
  depends_on_job_ids?: string[];
  dependency_type?: string;
  depends_on?: string[];
  dependency_mode?: 'all' | 'any';
}

const Edge = Type.Object({ job_id: Type.String(), queue_name: Type.Union([Type.String(), Type.Null()]), status: Type.Union([Type.String(), Type.Null()]), dependency_type: Type.String() });

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
    });
    return {
      added: result.added.length,
      dependencies: result.added,
      dependencies_added: result.added.length,
      dependencies_met: result.dependenciesMet,
    };
  });
}
