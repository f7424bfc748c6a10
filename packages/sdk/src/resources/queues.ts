/** Queues and workers (docs/compatibility.md §3.7, §3.8). */
import type { CallOptions } from '../http.js';
import { Resource, seg } from './resource.js';

export interface QueueConfigSummary {
  queueName: string;
  maxRetries: number;
  defaultTimeout: number;
  rateLimit: number | null;
  enabled: boolean;
}

export interface QueueConfig extends QueueConfigSummary {
  id: string;
  organizationId: string;
  settings: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface UpdateQueueConfigParams {
  maxRetries?: number;
  defaultTimeout?: number;
  rateLimit?: number | null;
  enabled?: boolean;
  settings?: Record<string, unknown>;
}

export interface QueueStats {
  queueName: string;
  pendingJobs: number;
  processingJobs: number;
  completedJobs24h: number;
  failedJobs24h: number;
  avgProcessingTimeMs: number | null;
  maxJobAgeSeconds: number | null;
  activeWorkers: number;
}

export interface PauseQueueResult {
  queueName: string;
  paused: boolean;
  pausedAt: string;
  reason: string | null;
}

export interface ResumeQueueResult {
  queueName: string;
  resumed: boolean;
  pausedDurationSecs: number;
}

export class QueuesResource extends Resource {
  /** Configured queues (a queue gets a config row once configured or paused). */
  list(options?: CallOptions): Promise<QueueConfigSummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/queues' }, options);
  }

  get(name: string, options?: CallOptions): Promise<QueueConfig> {
    return this.call({ method: 'GET', path: `/api/v1/queues/${seg(name)}` }, options);
  }

  /** Creates or updates the queue's config. */
  updateConfig(name: string, params: UpdateQueueConfigParams, options?: CallOptions): Promise<QueueConfig> {
    return this.call({ method: 'PUT', path: `/api/v1/queues/${seg(name)}/config`, body: { queueName: name, ...params } }, options);
  }

  stats(name: string, options?: CallOptions): Promise<QueueStats> {
    return this.call({ method: 'GET', path: `/api/v1/queues/${seg(name)}/stats` }, options);
  }

  /** Stops claims from the queue; enqueueing still works. */
  pause(name: string, reason?: string, options?: CallOptions): Promise<PauseQueueResult> {
    return this.call({ method: 'POST', path: `/api/v1/queues/${seg(name)}/pause`, body: reason === undefined ? {} : { reason }, idempotent: true }, options);
  }

  resume(name: string, options?: CallOptions): Promise<ResumeQueueResult> {
    return this.call({ method: 'POST', path: `/api/v1/queues/${seg(name)}/resume`, idempotent: true }, options);
  }

  /** Deletes the queue's config (409 while it has pending or processing jobs). */
  async delete(name: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', path: `/api/v1/queues/${seg(name)}` }, options);
  }
}

export type WorkerStatus = 'healthy' | 'degraded' | 'draining' | 'offline';

export interface WorkerSummary {
  id: string;
  queueName: string;
  hostname: string;
  status: WorkerStatus;
  currentJobs: number;
  maxConcurrency: number;
  lastHeartbeat: string;
}

export interface WorkerInfo extends WorkerSummary {
  organizationId: string;
  queueNames?: string[];
  workerType: string | null;
  metadata: Record<string, unknown>;
  version: string | null;
  registeredAt: string;
  updatedAt: string;
}

export interface RegisterWorkerParams {
  queueName: string;
  /** Spool extension: further queues this worker serves (up to 50). */
  queueNames?: string[];
  hostname: string;
  workerType?: string;
  maxConcurrency?: number;
  metadata?: Record<string, unknown>;
  version?: string;
}

export interface RegisterWorkerResult {
  id: string;
  queueName: string;
  leaseDurationSecs: number;
  heartbeatIntervalSecs: number;
}

export interface WorkerHeartbeatParams {
  currentJobs: number;
  status?: WorkerStatus;
  metadata?: Record<string, unknown>;
}

export class WorkersResource extends Resource {
  list(options?: CallOptions): Promise<WorkerSummary[]> {
    return this.call({ method: 'GET', path: '/api/v1/workers' }, options);
  }

  get(id: string, options?: CallOptions): Promise<WorkerInfo> {
    return this.call({ method: 'GET', path: `/api/v1/workers/${seg(id)}` }, options);
  }

  register(params: RegisterWorkerParams, options?: CallOptions): Promise<RegisterWorkerResult> {
    return this.call({ method: 'POST', path: '/api/v1/workers/register', body: params }, options);
  }

  async heartbeat(id: string, params: WorkerHeartbeatParams, options?: CallOptions): Promise<void> {
    await this.call({ method: 'POST', path: `/api/v1/workers/${seg(id)}/heartbeat`, body: params, idempotent: true }, options);
  }

  /** Marks the worker offline; the server returns its processing jobs to pending. */
  async deregister(id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'POST', path: `/api/v1/workers/${seg(id)}/deregister`, idempotent: true }, options);
  }
}
