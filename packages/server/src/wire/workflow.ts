import { Type } from 'typebox';
import type { WorkflowJobRow, WorkflowRow } from '@spool/engine';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** docs/compatibility.md §3.10 WorkflowResponse (+ `cancelled_jobs`, `blocked_jobs`: extension). */
export const WorkflowSchema = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  status: Type.String(),
  total_jobs: Type.Integer(),
  completed_jobs: Type.Integer(),
  failed_jobs: Type.Integer(),
  cancelled_jobs: Type.Integer(),
  blocked_jobs: Type.Integer(),
  progress_percent: Type.Number(),
  created_at: Type.String({ format: 'date-time' }),
  started_at: Timestamp,
  completed_at: Timestamp,
  metadata: Type.Unknown(),
});

export function workflowToWire(row: WorkflowRow): Record<string, unknown> {
  const progress = row.total_jobs === 0 ? 100 : Math.round((row.completed_jobs / row.total_jobs) * 10_000) / 100;
  return {
    id: row.id,
    organization_id: row.organization_id,
    name: row.name,
    description: row.description,
    status: row.status,
    total_jobs: row.total_jobs,
    completed_jobs: row.completed_jobs,
    failed_jobs: row.failed_jobs,
    cancelled_jobs: row.cancelled_jobs,
    blocked_jobs: row.blocked_jobs,
    progress_percent: progress,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    metadata: row.metadata ?? null,
  };
}

const Policy = Type.String({ description: 'block, cancel or continue (docs/workflows.md, "When a parent fails")' });

/** docs/compatibility.md §3.10 WorkflowJob (+ `dependency_mode`, `dependencies_met`, `on_parent_failure`). */
export const WorkflowJobSchema = Type.Object({
  id: Type.String(),
  workflow_id: Type.String(),
  key: Type.Union([Type.String(), Type.Null()]),
  queue_name: Type.String(),
  status: Type.String(),
  payload: Type.Unknown(),
  result: Type.Unknown(),
  error: Type.Union([Type.String(), Type.Null()]),
  depends_on: Type.Array(Type.String()),
  priority: Type.Integer(),
  max_retries: Type.Integer(),
  attempt: Type.Integer(),
  timeout_seconds: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  started_at: Timestamp,
  completed_at: Timestamp,
  dependency_mode: Type.Union([Type.String(), Type.Null()]),
  dependencies_met: Type.Boolean(),
  on_parent_failure: Type.Record(Type.String(), Policy, {
    description: 'extension: per depends_on entry (by job id), what that dependency\'s final failure does to this job',
  }),
});

export function workflowJobToWire(row: WorkflowJobRow): Record<string, unknown> {
  return {
    id: row.id,
    workflow_id: row.workflow_id,
    key: row.key,
    queue_name: row.queue_name,
    status: row.status,
    payload: row.payload,
    result: row.result ?? null,
    error: row.error,
    depends_on: row.depends_on,
    priority: row.priority,
    max_retries: row.max_retries,
    attempt: row.attempt,
    timeout_seconds: row.timeout_seconds,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    dependency_mode: row.dependency_mode,
    dependencies_met: row.dependencies_met !== false,
    on_parent_failure: Object.fromEntries(row.depends_on.map((parent, i) => [parent, row.on_parent_failure[i] ?? 'block'])),
  };
}

/**
 * GET /workflows/{id}: WorkflowResponse plus the workflow's jobs, its
 * dependency edges and per-status progress, which the official Spooled
 * dashboard's workflow page reads (SDKs ignore them).
 */
export const WorkflowDetailSchema = Type.Object({
  ...WorkflowSchema.properties,
  jobs: Type.Array(WorkflowJobSchema, { description: 'extension: the jobs of the key\'s queues, as GET /workflows/{id}/jobs' }),
  dependencies: Type.Array(Type.Object({ parent_job_id: Type.String(), child_job_id: Type.String(), dependency_type: Type.String(), on_parent_failure: Policy }), {
    description: 'extension: one edge per depends_on entry of those jobs (the child runs once its parents completed; on_parent_failure says what a parent\'s final failure does to it)',
  }),
  progress: Type.Object({
    total: Type.Integer(),
    completed: Type.Integer(),
    failed: Type.Integer({ description: 'failed and dead-lettered' }),
    pending: Type.Integer({ description: 'pending and scheduled' }),
    processing: Type.Integer(),
  }, { description: 'extension: the workflow\'s jobs by status' }),
});

export function workflowDetailToWire(row: WorkflowRow, jobs: WorkflowJobRow[], visible: (job: WorkflowJobRow) => boolean): Record<string, unknown> {
  const count = (...statuses: string[]) => jobs.filter((job) => statuses.includes(job.status)).length;
  const shown = jobs.filter(visible);
  return {
    ...workflowToWire(row),
    jobs: shown.map(workflowJobToWire),
    // Workflow edges are stored with the column default, 'completion'.
    dependencies: shown.flatMap((job) => job.depends_on.map((parent, i) => ({
      parent_job_id: parent, child_job_id: job.id, dependency_type: 'completion', on_parent_failure: job.on_parent_failure[i] ?? 'block',
    }))),
    progress: {
      total: jobs.length,
      completed: count('completed'),
      failed: count('failed', 'deadletter'),
      pending: count('pending', 'scheduled'),
      processing: count('processing'),
    },
  };
}
