/**
 * A small in-memory HTTP server that speaks just enough of the wire contract
 * (docs/compatibility.md §1.2–§3.9, snake_case, plus Spool's long poll and batch
 * extensions) to test the SDK and the CLI over real HTTP. Written against the
 * wire directly (no SDK code) so key conversion is actually checked.
 *
 * Test hooks: `inject()` queues canned answers for a route, `requests` logs
 * every request, `requestCancel()` flags a running job, `batch: false`
 * removes the batch endpoints, `longPoll: false` ignores `wait_ms`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Row = Record<string, unknown> & { id: string };

export interface Canned {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Destroy the socket instead of answering. */
  drop?: boolean;
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
  rawBody: string;
}

export interface FakeServerOptions {
  apiKey?: string;
  batch?: boolean;
  longPoll?: boolean;
}

export class FakeSpoolServer {
  readonly apiKey: string;
  batch: boolean;
  longPoll: boolean;
  readonly jobs: Row[] = [];
  readonly workers: Row[] = [];
  readonly schedules: Row[] = [];
  readonly queues = new Map<string, Row>();
  readonly requests: LoggedRequest[] = [];
  readonly cancelRequested = new Set<string>();
  /** Jobs whose running attempt passed its enforced deadline: their worker calls are refused as timed out. */
  readonly timedOut = new Set<string>();
  url = '';
  readonly #canned = new Map<string, Canned[]>();
  readonly #waiters = new Set<() => void>();
  readonly #server: Server;

  constructor(options: FakeServerOptions = {}) {
    this.apiKey = options.apiKey ?? 'sk_test_fakekey000000000000000000000000000000000';
    this.batch = options.batch ?? true;
    this.longPoll = options.longPoll ?? true;
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const wake of this.#waiters) wake();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** The next answers for `METHOD /path` (exact path, no query) come from this list before the normal handler. */
  inject(method: string, path: string, ...answers: Canned[]): void {
    const key = `${method} ${path}`;
    this.#canned.set(key, [...(this.#canned.get(key) ?? []), ...answers]);
  }

  /** Requests to a path (optionally one method). */
  calls(path: string | RegExp, method?: string): LoggedRequest[] {
    return this.requests.filter((r) => (typeof path === 'string' ? r.path === path : path.test(r.path)) && (!method || r.method === method));
  }

  job(id: string): Row | undefined {
    return this.jobs.find((job) => job.id === id);
  }

  requestCancel(id: string): void {
    this.cancelRequested.add(id);
  }

  /** Inserts a job straight into the store (wire shape). */
  addJob(queueName: string, payload: unknown, extra: Record<string, unknown> = {}): Row {
    const now = new Date().toISOString();
    const job: Row = {
      id: randomUUID(), organization_id: 'org', queue_name: queueName, status: 'pending', payload, result: null,
      retry_count: 0, max_retries: 3, last_error: null, created_at: now, scheduled_at: null, started_at: null,
      completed_at: null, expires_at: null, priority: 0, tags: null, timeout_seconds: 300, parent_job_id: null,
      completion_webhook: null, assigned_worker_id: null, lease_id: null, lease_expires_at: null, idempotency_key: null,
      updated_at: now, workflow_id: null, dependency_mode: null, dependencies_met: null, ...extra,
    };
    this.jobs.push(job);
    for (const wake of [...this.#waiters]) wake();
    return job;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const rawBody = await readBody(req);
    let body: unknown = undefined;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      return send(res, 400, { code: 'BAD_REQUEST', message: 'invalid JSON' });
    }
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body, rawBody });
    const canned = this.#canned.get(`${req.method} ${url.pathname}`)?.shift();
    if (canned) {
      if (canned.drop) return void req.socket.destroy();
      return send(res, canned.status, canned.body, canned.headers);
    }
    if (url.pathname.startsWith('/api/v1/') && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return send(res, 401, { code: 'AUTHENTICATION_FAILED', message: 'Invalid API key' }, { 'x-request-id': 'req-401' });
    }
    const answer = await this.#route(req.method ?? 'GET', url.pathname.split('/').filter(Boolean), url.searchParams, (body ?? {}) as Record<string, any>, res);
    if (answer === undefined) return send(res, 404, { code: 'NOT_FOUND', message: `No route ${req.method} ${url.pathname}` });
    if (!res.destroyed) send(res, answer[0], answer[1]);
  }

  async #route(method: string, parts: string[], query: URLSearchParams, body: Record<string, any>, res: ServerResponse): Promise<[number, unknown] | undefined> {
    const route = `${method} /${parts.map((p, i) => (i >= 3 && isId(parts, i) ? ':id' : p)).join('/')}`;
    const id = decodeURIComponent(parts[3] ?? '');
    switch (route) {
      case 'GET /health':
        return [200, { status: 'healthy', version: 'fake', database: true, cache: true }];
      case 'GET /api/v1/dashboard':
        return [200, this.#dashboard()];
      case 'POST /api/v1/jobs':
        return this.#create(body);
      case 'GET /api/v1/jobs':
        return [200, this.#list(query, (job) => (!query.get('queue_name') || job.queue_name === query.get('queue_name')) && (!query.get('status') || job.status === query.get('status')))];
      case 'GET /api/v1/jobs/stats':
        return [200, this.#stats()];
      case 'POST /api/v1/jobs/bulk':
        return this.#bulk(body);
      case 'POST /api/v1/jobs/claim':
        return this.#claim(body, res);
      case 'POST /api/v1/jobs/complete':
      case 'POST /api/v1/jobs/fail':
        if (!this.batch) return undefined;
        return [200, { results: (body.items as Record<string, any>[]).map((item) => this.#batchItem(parts[3]!, body.worker_id, item)) }];
      case 'GET /api/v1/jobs/dlq':
        return [200, this.#list(query, (job) => job.status === 'deadletter')];
      case 'POST /api/v1/jobs/dlq/retry':
        return this.#dlqRetry(body);
      case 'POST /api/v1/jobs/dlq/purge':
        return this.#dlqPurge(body);
      case 'GET /api/v1/jobs/:id':
        return this.job(id) ? [200, this.job(id)] : notFound('Job not found');
      case 'DELETE /api/v1/jobs/:id':
        return this.#cancel(id);
      case 'POST /api/v1/jobs/:id/retry':
        return this.#retry(id);
      case 'POST /api/v1/jobs/:id/complete':
      case 'POST /api/v1/jobs/:id/fail':
      case 'POST /api/v1/jobs/:id/heartbeat':
        return this.#workerCall(parts[4]!, id, body);
      case 'GET /api/v1/queues':
        return [200, [...this.queues.values()].map(({ queue_name, max_retries, default_timeout, rate_limit, enabled }) => ({ queue_name, max_retries, default_timeout, rate_limit, enabled }))];
      case 'POST /api/v1/queues/:id/pause':
      case 'POST /api/v1/queues/:id/resume':
        return this.#pause(id, parts[4] === 'pause', body);
      case 'GET /api/v1/workers':
        return [200, this.workers.map(({ id: wid, queue_name, hostname, status, current_jobs, max_concurrency, last_heartbeat }) => ({ id: wid, queue_name, hostname, status, current_jobs, max_concurrency, last_heartbeat }))];
      case 'POST /api/v1/workers/register':
        return this.#register(body);
      case 'POST /api/v1/workers/:id/heartbeat':
      case 'POST /api/v1/workers/:id/deregister':
        return this.#workerLife(parts[4]!, id, body);
      case 'GET /api/v1/schedules':
        return [200, this.schedules];
      case 'POST /api/v1/schedules':
        return this.#createSchedule(body);
      case 'POST /api/v1/schedules/:id/pause':
      case 'POST /api/v1/schedules/:id/resume':
      case 'POST /api/v1/schedules/:id/trigger':
        return this.#scheduleAction(parts[4]!, id);
      default:
        return undefined;
    }
  }

  #create(body: Record<string, any>): [number, unknown] {
    if (typeof body.queue_name !== 'string' || body.queue_name === '') return [400, { code: 'VALIDATION_ERROR', message: 'queue_name is required', details: { field: 'queue_name' } }];
    if (body.payload === undefined) return [400, { code: 'VALIDATION_ERROR', message: 'payload is required' }];
    if (body.idempotency_key) {
      const existing = this.jobs.find((job) => job.idempotency_key === body.idempotency_key);
      if (existing) return [200, { id: existing.id, created: false }];
    }
    const job = this.addJob(body.queue_name, body.payload, {
      priority: body.priority ?? 0, max_retries: body.max_retries ?? 3, timeout_seconds: body.timeout_seconds ?? 300,
      tags: body.tags ?? null, idempotency_key: body.idempotency_key ?? null,
    });
    return [201, { id: job.id, created: true }];
  }

  #bulk(body: Record<string, any>): [number, unknown] {
    const items = body.jobs as Record<string, any>[] | undefined;
    if (!Array.isArray(items) || items.length === 0 || items.length > 100) return [400, { code: 'VALIDATION_ERROR', message: 'jobs must have 1..100 items' }];
    const succeeded: unknown[] = [];
    const failed: unknown[] = [];
    items.forEach((item, index) => {
      if (item.payload === undefined) return void failed.push({ index, error: 'payload is required' });
      const [, answer] = this.#create({ queue_name: body.queue_name, payload: item.payload, priority: item.priority ?? body.default_priority, idempotency_key: item.idempotency_key });
      const { id, created } = answer as { id: string; created: boolean };
      succeeded.push({ index, job_id: id, created });
    });
    return [200, { succeeded, failed, total: items.length, success_count: succeeded.length, failure_count: failed.length }];
  }

  #list(query: URLSearchParams, keep: (job: Row) => boolean): unknown[] {
    const limit = Math.min(Number(query.get('limit') ?? 50), 100);
    const offset = Number(query.get('offset') ?? 0);
    return this.jobs
      .filter(keep)
      .slice()
      .reverse()
      .slice(offset, offset + limit)
      .map(({ id, queue_name, status, priority, retry_count, created_at, scheduled_at, started_at, completed_at }) => ({ id, queue_name, status, priority, retry_count, created_at, scheduled_at, started_at, completed_at }));
  }

  #stats(): Record<string, number> {
    const stats: Record<string, number> = { pending: 0, scheduled: 0, processing: 0, completed: 0, failed: 0, deadletter: 0, cancelled: 0, total: 0 };
    for (const job of this.jobs) {
      stats[job.status as string]! += 1;
      stats.total! += 1;
    }
    return stats;
  }

  #dashboard(): unknown {
    const stats = this.#stats();
    return {
      system: { version: 'fake', uptime_seconds: 1, started_at: new Date().toISOString(), database_status: 'ok', cache_status: 'ok', environment: 'test' },
      jobs: { total: stats.total, pending: stats.pending, processing: stats.processing, completed_24h: stats.completed, failed_24h: stats.failed, deadletter: stats.deadletter },
      queues: [...new Set(this.jobs.map((job) => job.queue_name as string))].map((name) => ({ name, pending: this.jobs.filter((j) => j.queue_name === name && j.status === 'pending').length, processing: 0, paused: this.queues.get(name)?.enabled === false })),
      workers: { total: this.workers.length, healthy: this.workers.filter((w) => w.status === 'healthy').length, unhealthy: 0 },
      recent_activity: { jobs_created_1h: stats.total, jobs_completed_1h: stats.completed, jobs_failed_1h: stats.failed },
    };
  }

  async #claim(body: Record<string, any>, res: ServerResponse): Promise<[number, unknown]> {
    const waitMs = this.longPoll ? Math.min(Number(body.wait_ms ?? 0), 30_000) : 0;
    const deadline = Date.now() + waitMs;
    let gone = false;
    res.on('close', () => (gone = true));
    for (;;) {
      if (gone) return [499, {}];
      const now = new Date().toISOString();
      // queue_names (Spool extension): several queues, in claim order across them.
      const names: string[] = Array.isArray(body.queue_names) ? body.queue_names : [body.queue_name];
      const due = this.jobs.filter(
        (job) =>
          names.includes(job.queue_name as string) &&
          job.status === 'pending' &&
          (job.scheduled_at === null || (job.scheduled_at as string) <= now) &&
          this.queues.get(job.queue_name as string)?.enabled !== false,
      );
      if (names.length > 1) due.sort((a, b) => (b.priority as number) - (a.priority as number) || (a.created_at as string).localeCompare(b.created_at as string));
      if (due.length > 0 || Date.now() >= deadline) {
        const claimed = due.slice(0, Math.min(Number(body.limit ?? 1), 100));
        const lease = Number(body.lease_duration_secs ?? 30);
        for (const job of claimed) {
          Object.assign(job, { status: 'processing', assigned_worker_id: body.worker_id, lease_id: randomUUID(), lease_expires_at: new Date(Date.now() + lease * 1000).toISOString(), started_at: job.started_at ?? new Date().toISOString() });
        }
        return [200, { jobs: claimed.map((job) => ({ ...job })) }];
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
        this.#waiters.add(wake);
        res.once('close', wake);
      });
    }
  }

  #owned(id: string, body: Record<string, any>): Row | [number, unknown] {
    const job = this.job(id);
    if (!job || job.status !== 'processing' || job.assigned_worker_id !== body.worker_id) return [404, { success: false, error: 'job_not_found_or_not_owned', code: 'NOT_FOUND', message: 'job_not_found_or_not_owned' }];
    if (body.lease_id && body.lease_id !== job.lease_id) return [409, { code: 'LEASE_EXPIRED', message: 'Lease expired' }];
    if (this.timedOut.has(id)) {
      const details = { job_id: id, timed_out: true };
      return body.lease_id
        ? [409, { success: false, code: 'LEASE_EXPIRED', error: 'lease_expired', message: 'Lease expired: the attempt timed out', details }]
        : [404, { success: false, error: 'job_not_found_or_not_owned', code: 'NOT_FOUND', message: 'the attempt timed out', details }];
    }
    return job;
  }

  #workerCall(action: string, id: string, body: Record<string, any>): [number, unknown] {
    const owned = this.#owned(id, body);
    if (Array.isArray(owned)) return owned;
    const job = owned;
    if (action === 'heartbeat') {
      job.lease_expires_at = new Date(Date.now() + Number(body.lease_duration_secs ?? 30) * 1000).toISOString();
      return [200, { success: true, cancel_requested: this.cancelRequested.has(id), lease_expires_at: job.lease_expires_at, deadline_at: null, timed_out: false }];
    }
    if (action === 'complete') {
      Object.assign(job, { status: 'completed', result: body.result ?? null, completed_at: new Date().toISOString(), lease_id: null, assigned_worker_id: null });
      return [200, { success: true }];
    }
    if (typeof body.error !== 'string' || body.error === '') return [400, { code: 'VALIDATION_ERROR', message: 'error is required' }];
    const retry = body.retryable !== false && !this.cancelRequested.has(id) && (job.retry_count as number) < (job.max_retries as number);
    const status = this.cancelRequested.has(id) ? 'cancelled' : retry ? 'pending' : 'deadletter';
    // Backoff as in the contract: min(2^retry_count, 60) minutes.
    const backoffMs = Math.min(2 ** (job.retry_count as number), 60) * 60_000;
    Object.assign(job, {
      status, last_error: body.error, lease_id: null, assigned_worker_id: null,
      retry_count: (job.retry_count as number) + (retry ? 1 : 0),
      scheduled_at: retry ? new Date(Date.now() + backoffMs).toISOString() : job.scheduled_at,
    });
    return [200, { success: true, will_retry: retry }];
  }

  #batchItem(action: string, workerId: unknown, item: Record<string, any>): unknown {
    const [status, answer] = this.#workerCall(action, item.job_id, { ...item, worker_id: workerId });
    const result = answer as Record<string, unknown>;
    return status === 200 ? { job_id: item.job_id, success: true, will_retry: result.will_retry } : { job_id: item.job_id, success: false, error: result.message };
  }

  #cancel(id: string): [number, unknown] {
    const job = this.job(id);
    if (!job) return notFound('Job not found');
    if (job.status === 'processing') {
      this.cancelRequested.add(id);
      return [409, { code: 'CONFLICT', message: 'Job is processing: cancellation was requested', details: { job_id: id, cancel_requested: true } }];
    }
    if (job.status !== 'pending' && job.status !== 'scheduled') return [409, { code: 'CONFLICT', message: `Cannot cancel a ${job.status} job` }];
    job.status = 'cancelled';
    return [204, undefined];
  }

  #retry(id: string): [number, unknown] {
    const job = this.job(id);
    if (!job) return notFound('Job not found');
    if (job.status !== 'failed' && job.status !== 'deadletter') return [409, { code: 'CONFLICT', message: `Cannot retry a ${job.status} job` }];
    Object.assign(job, { status: 'pending', retry_count: (job.retry_count as number) + 1, last_error: null, scheduled_at: null });
    return [200, job];
  }

  #dlqRetry(body: Record<string, any>): [number, unknown] {
    const ids = body.job_ids as string[] | undefined;
    const chosen = this.jobs.filter((job) => job.status === 'deadletter' && (ids ? ids.includes(job.id) : !body.queue_name || job.queue_name === body.queue_name));
    for (const job of chosen) Object.assign(job, { status: 'pending', retry_count: 0, last_error: null, scheduled_at: null });
    return [200, { retried_count: chosen.length, retried_jobs: chosen.map((job) => job.id) }];
  }

  #dlqPurge(body: Record<string, any>): [number, unknown] {
    if (body.confirm !== true) return [400, { code: 'VALIDATION_ERROR', message: 'confirm must be true' }];
    const doomed = this.jobs.filter((job) => job.status === 'deadletter' && (!body.queue_name || job.queue_name === body.queue_name));
    for (const job of doomed) this.jobs.splice(this.jobs.indexOf(job), 1);
    return [200, { purged_count: doomed.length }];
  }

  #pause(name: string, pause: boolean, body: Record<string, any>): [number, unknown] {
    const now = new Date().toISOString();
    const existing = this.queues.get(name);
    if (!pause && !existing) return notFound(`Queue ${name} has no config`);
    const config = existing ?? { id: randomUUID(), organization_id: 'org', queue_name: name, max_retries: 3, default_timeout: 300, rate_limit: null, settings: {}, created_at: now };
    Object.assign(config, { enabled: !pause, updated_at: now });
    this.queues.set(name, config);
    for (const wake of [...this.#waiters]) wake();
    return pause ? [200, { queue_name: name, paused: true, paused_at: now, reason: body.reason ?? null }] : [200, { queue_name: name, resumed: true, paused_duration_secs: 0 }];
  }

  #register(body: Record<string, any>): [number, unknown] {
    if (!body.queue_name || !body.hostname) return [400, { code: 'VALIDATION_ERROR', message: 'queue_name and hostname are required' }];
    const worker: Row = { id: randomUUID(), queue_name: body.queue_name, hostname: body.hostname, status: 'healthy', current_jobs: 0, max_concurrency: body.max_concurrency ?? 5, last_heartbeat: new Date().toISOString(), metadata: body.metadata ?? {}, version: body.version ?? null };
    this.workers.push(worker);
    return [201, { id: worker.id, queue_name: body.queue_name, lease_duration_secs: 30, heartbeat_interval_secs: 10 }];
  }

  #workerLife(action: string, id: string, body: Record<string, any>): [number, unknown] {
    const worker = this.workers.find((w) => w.id === id);
    if (!worker) return notFound('Worker not found');
    if (action === 'heartbeat') {
      Object.assign(worker, { current_jobs: body.current_jobs, status: body.status ?? 'healthy', last_heartbeat: new Date().toISOString() });
      return [200, {}];
    }
    worker.status = 'offline';
    for (const job of this.jobs) {
      if (job.status === 'processing' && job.assigned_worker_id === id) Object.assign(job, { status: 'pending', lease_id: null, assigned_worker_id: null });
    }
    return [204, undefined];
  }

  #createSchedule(body: Record<string, any>): [number, unknown] {
    if (!body.name || !body.cron_expression || !body.queue_name || body.payload_template === undefined) return [400, { code: 'VALIDATION_ERROR', message: 'name, cron_expression, queue_name and payload_template are required' }];
    const now = new Date().toISOString();
    const schedule: Row = {
      id: randomUUID(), organization_id: 'org', name: body.name, description: body.description ?? null, cron_expression: body.cron_expression,
      timezone: body.timezone ?? 'UTC', queue_name: body.queue_name, payload_template: body.payload_template, priority: body.priority ?? 0,
      max_retries: 3, timeout_seconds: 300, is_active: true, last_run_at: null, next_run_at: now, run_count: 0, tags: null, metadata: null, created_at: now, updated_at: now,
    };
    this.schedules.push(schedule);
    return [201, { id: schedule.id, name: schedule.name, cron_expression: schedule.cron_expression, next_run_at: now }];
  }

  #scheduleAction(action: string, id: string): [number, unknown] {
    const schedule = this.schedules.find((s) => s.id === id);
    if (!schedule) return notFound('Schedule not found');
    if (action === 'trigger') {
      const job = this.addJob(schedule.queue_name as string, schedule.payload_template);
      schedule.run_count = (schedule.run_count as number) + 1;
      return [200, { job_id: job.id, scheduled_at: job.created_at, triggered_at: job.created_at }];
    }
    schedule.is_active = action === 'resume';
    return [200, schedule];
  }
}

const STATIC_SEGMENTS = new Set(['stats', 'bulk', 'claim', 'dlq', 'complete', 'fail', 'status', 'register']);

function isId(parts: string[], index: number): boolean {
  return index === 3 && !STATIC_SEGMENTS.has(parts[3]!);
}

function notFound(message: string): [number, unknown] {
  return [404, { code: 'NOT_FOUND', message }];
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined || status === 204) {
    res.writeHead(status, headers).end();
    return;
  }
  const isText = typeof body === 'string';
  res.writeHead(status, { 'content-type': isText ? 'text/plain' : 'application/json', ...headers }).end(isText ? body : JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
