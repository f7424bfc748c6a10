/** Cron schedules and workflows (docs/compatibility.md §3.9, §3.10). */
import type { CallOptions } from '../http.js';
import type { Json, JobStatus, OnParentFailure } from './jobs.js';
import { Resource, seg } from './resource.js';

export interface Schedule {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  /** Six fields: `sec min hour day-of-month month day-of-week`. */
  cronExpression: string;
  timezone: string;
  queueName: string;
  payloadTemplate: Json;
  priority: number;
  maxRetries: number;
  timeoutSeconds: number;
  isActive: boolean;
  lastRunAt: string | null;
  nextRunAt: string | null;
  runCount: number;
  tags: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateScheduleParams {
  name: string;
  description?: string;
  cronExpression: string;
  timezone?: string;
  queueName: string;
  payloadTemplate: Json;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  tags?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export type UpdateScheduleParams = Partial<Omit<CreateScheduleParams, 'queueName'>> & { isActive?: boolean };

export interface CreateScheduleResult {
  id: string;
  name: string;
  cronExpression: string;
  nextRunAt: string | null;
}

export interface TriggerScheduleResult {
  jobId: string;
  scheduledAt: string;
  triggeredAt?: string;
}

export interface ScheduleRun {
  id: string;
  scheduleId: string;
  jobId: string | null;
  status: 'pending' | 'running' | 'completed' | 'failed';
  errorMessage: string | null;
  startedAt: string;
  completedAt: string | null;
}

export class SchedulesResource extends Resource {
  list(params: { limit?: number; offset?: number } = {}, options?: CallOptions): Promise<Schedule[]> {
    return this.call({ method: 'GET', path: '/api/v1/schedules', query: { ...params } }, options);
  }

  create(params: CreateScheduleParams, options?: CallOptions): Promise<CreateScheduleResult> {
    return this.call({ method: 'POST', path: '/api/v1/schedules', body: params }, options);
  }

  get(id: string, options?: CallOptions): Promise<Schedule> {
    return this.call({ method: 'GET', path: `/api/v1/schedules/${seg(id)}` }, options);
  }

  update(id: string, params: UpdateScheduleParams, options?: CallOptions): Promise<Schedule> {
    return this.call({ method: 'PUT', path: `/api/v1/schedules/${seg(id)}`, body: params }, options);
  }

  async delete(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/schedules/${seg(id)}` }, options);
  }

  pause(id: string, options?: CallOptions): Promise<Schedule> {
    return this.call({ method: 'POST', path: `/api/v1/schedules/${seg(id)}/pause`, idempotent: true }, options);
  }

  resume(id: string, options?: CallOptions): Promise<Schedule> {
    return this.call({ method: 'POST', path: `/api/v1/schedules/${seg(id)}/resume`, idempotent: true }, options);
  }

  /** Creates one job from the schedule now (also while paused). */
  trigger(id: string, options?: CallOptions): Promise<TriggerScheduleResult> {
    return this.call({ method: 'POST', path: `/api/v1/schedules/${seg(id)}/trigger` }, options);
  }

  history(id: string, params: { limit?: number } = {}, options?: CallOptions): Promise<ScheduleRun[]> {
    return this.call({ method: 'GET', path: `/api/v1/schedules/${seg(id)}/history`, query: { ...params } }, options);
  }
}

export type WorkflowStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface Workflow {
  id: string;
  name: string;
  description: string | null;
  status: WorkflowStatus;
  totalJobs: number;
  completedJobs: number;
  failedJobs: number;
  progressPercent: number;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  metadata: Record<string, unknown> | null;
}

export interface WorkflowJobDefinition {
  key: string;
  queueName: string;
  payload: Json;
  dependsOn?: string[];
  dependencyMode?: 'all' | 'any';
  /**
   * Spool extension: what a dependency's final failure does to this job, for
   * all its edges or per dependency key (`{ extract: 'continue' }`); edges
   * not named take the workflow's `onParentFailure`.
   */
  onParentFailure?: OnParentFailure | Record<string, OnParentFailure>;
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
}

export interface CreateWorkflowParams {
  name: string;
  description?: string;
  jobs: WorkflowJobDefinition[];
  metadata?: Record<string, unknown>;
  /** Spool extension: the default of the workflow's edges (`block` when absent). */
  onParentFailure?: OnParentFailure;
}

export interface CreateWorkflowResult {
  workflowId: string;
  jobIds: { key: string; jobId: string }[];
  status: WorkflowStatus;
}

export interface WorkflowJob {
  id: string;
  workflowId: string;
  key: string;
  queueName: string;
  status: JobStatus;
  payload: Json;
  result: Json | null;
  error: string | null;
  dependsOn: string[];
  priority: number;
  maxRetries: number;
  attempt: number;
  timeoutSeconds: number;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  /** Spool extension: per depends_on entry (by job id), that edge's policy. */
  onParentFailure?: Record<string, OnParentFailure>;
}

export interface WorkflowJobStatus {
  jobId: string;
  key: string;
  status: JobStatus;
  progress?: number | null;
}

export class WorkflowsResource extends Resource {
  list(params: { status?: WorkflowStatus; limit?: number; offset?: number } = {}, options?: CallOptions): Promise<Workflow[]> {
    return this.call({ method: 'GET', path: '/api/v1/workflows', query: { ...params } }, options);
  }

  create(params: CreateWorkflowParams, options?: CallOptions): Promise<CreateWorkflowResult> {
    return this.call({ method: 'POST', path: '/api/v1/workflows', body: params }, options);
  }

  get(id: string, options?: CallOptions): Promise<Workflow> {
    return this.call({ method: 'GET', path: `/api/v1/workflows/${seg(id)}` }, options);
  }

  cancel(id: string, options?: CallOptions): Promise<Workflow> {
    return this.call({ method: 'POST', path: `/api/v1/workflows/${seg(id)}/cancel`, idempotent: true }, options);
  }

  /** Re-runs the failed jobs of a failed workflow (400 for any other status). */
  retry(id: string, options?: CallOptions): Promise<Workflow> {
    return this.call({ method: 'POST', path: `/api/v1/workflows/${seg(id)}/retry` }, options);
  }

  jobs(id: string, options?: CallOptions): Promise<WorkflowJob[]> {
    return this.call({ method: 'GET', path: `/api/v1/workflows/${seg(id)}/jobs` }, options);
  }

  job(id: string, jobId: string, options?: CallOptions): Promise<WorkflowJob> {
    return this.call({ method: 'GET', path: `/api/v1/workflows/${seg(id)}/jobs/${seg(jobId)}` }, options);
  }

  jobStatuses(id: string, options?: CallOptions): Promise<WorkflowJobStatus[]> {
    return this.call({ method: 'GET', path: `/api/v1/workflows/${seg(id)}/jobs/status` }, options);
  }
}
