import { AccessDeniedError, NotFoundError, type ApiKeyRole } from '@spool/protocol';
import { jobsOutsideQueues, workerGet, type Db, type WorkerRow } from '@spool/engine';
import type { AuthContext } from './http/auth.js';

/**
 * The one authorization decision of Spool. Every operation a credential can
 * ask for, over REST, gRPC, realtime or incoming webhooks, is named here with
 * what it needs; `authorize()` decides whether the caller's key (its role and
 * its queues, read from the key on every request) may perform it, and the
 * returned Grant decides which queues' objects it may see or touch. Transports
 * only say which operation they run and which queues or objects it addresses.
 *
 * Rules (docs/tenancy.md, "Authorization"):
 * - An operation that names a queue the key may not use is a 403.
 * - An object addressed by id whose queue the key may not use is a 404, like
 *   another organization's: the key learns nothing about it.
 * - Lists and streams carry only the key's queues.
 * - Objects spanning queues (workflows, workers) are visible when any of
 *   their queues is allowed, changeable only when all are.
 * - Organization-level operations (keys, outgoing webhooks, the ingestion
 *   token, settings, deletion, billing, usage) need a key with every queue.
 */

/** What an operation needs from the key's role. */
type Need =
  /** Any authenticated key (who am I, log out, slug helpers, cron preview, the dashboard overview). */
  | 'any'
  /** Create jobs: single, bulk, workflows. */
  | 'enqueue'
  /** The worker protocol: claim, heartbeat, complete, fail, worker registration. */
  | 'work'
  /** Read jobs (payloads and results included). */
  | 'read_jobs'
  /** What a job runs with besides its payload (its dependencies' results): the roles that read jobs, and workers, whose handlers need it. */
  | 'job_inputs'
  /** Read everything else queue-bound: queues, workers, schedules, event streams, the organization's metrics and activity history. */
  | 'read'
  /** Change what exists: cancel, retry, priority, edits, dependencies, DLQ, queue config, schedules, workflows. */
  | 'manage'
  /** Read organization-level objects (organization, usage, billing, key and webhook summaries). */
  | 'org_read'
  /** Change organization-level objects, or read their secrets. */
  | 'org_admin';

const ROLE_NEEDS: Record<ApiKeyRole, ReadonlySet<Need>> = {
  admin: new Set<Need>(['any', 'enqueue', 'work', 'read_jobs', 'job_inputs', 'read', 'manage', 'org_read', 'org_admin']),
  producer: new Set<Need>(['any', 'enqueue', 'read_jobs', 'job_inputs']),
  worker: new Set<Need>(['any', 'work', 'job_inputs']),
  read_only: new Set<Need>(['any', 'read_jobs', 'job_inputs', 'read', 'org_read']),
};

/** Needs that only read: objects spanning queues are visible when any of their queues is allowed. */
const READS = new Set<Need>(['any', 'read_jobs', 'job_inputs', 'read', 'org_read']);

/** Every operation, with what it needs. The route table test checks every route names one. */
export const OPERATIONS = {
  'auth.self': 'any',
  'organization.slug': 'any',
  'schedule.preview': 'any',
  // Clients probe a key with it; every key sees the figures of its own queues.
  'dashboard.read': 'any',

  'job.create': 'enqueue',
  'workflow.create': 'enqueue',

  'job.claim': 'work',
  'job.heartbeat': 'work',
  'job.complete': 'work',
  'job.fail': 'work',
  'worker.register': 'work',
  'worker.heartbeat': 'work',
  'worker.deregister': 'work',

  'job.read': 'read_jobs',
  'job.list': 'read_jobs',
  'job.stats': 'read_jobs',
  'dlq.list': 'read_jobs',
  // Paced DLQ replays: read like the DLQ, made and cancelled like a DLQ retry.
  'dlq.replay_read': 'read_jobs',
  'workflow.read': 'read_jobs',
  // GET /jobs/{id}/dependencies/results: a dependent's handler reads it with a worker key.
  'job.dependency_results': 'job_inputs',

  'queue.read': 'read',
  'worker.read': 'read',
  'schedule.read': 'read',
  'events.read': 'read',
  'metrics.read': 'read',
  'stats.read': 'read',

  'job.cancel': 'manage',
  'job.retry': 'manage',
  'job.set_priority': 'manage',
  'job.update': 'manage',
  'job.add_dependencies': 'manage',
  'dlq.retry': 'manage',
  'dlq.purge': 'manage',
  'dlq.replay': 'manage',
  'dlq.replay_cancel': 'manage',
  'queue.manage': 'manage',
  'schedule.manage': 'manage',
  'workflow.manage': 'manage',

  'organization.read': 'org_read',
  'api_key.read': 'org_read',
  'webhook.read': 'org_read',
  'billing.read': 'org_read',

  'organization.manage': 'org_admin',
  'organization.webhook_token': 'org_admin',
  'api_key.manage': 'org_admin',
  'webhook.manage': 'org_admin',
  'billing.manage': 'org_admin',
} as const satisfies Record<string, Need>;

export type Operation = keyof typeof OPERATIONS;

export function isOperation(value: unknown): value is Operation {
  return typeof value === 'string' && Object.hasOwn(OPERATIONS, value);
}

/** True when `patterns` (a key's queues) reach every queue: [] or containing "*". */
export function everyQueue(patterns: readonly string[]): boolean {
  return patterns.length === 0 || patterns.includes('*');
}

function matches(pattern: string, queue: string): boolean {
  return pattern === queue || (pattern.endsWith('*') && queue.startsWith(pattern.slice(0, -1)));
}

/** A key pattern as a LIKE pattern: "prefix*" matches by prefix, everything else literally. */
function likePattern(pattern: string): string {
  const prefix = pattern.endsWith('*');
  const literal = (prefix ? pattern.slice(0, -1) : pattern).replace(/[\\%_]/g, (c) => `\\${c}`);
  return prefix ? `${literal}%` : literal;
}

const ROLE_NAMES: Record<ApiKeyRole, string> = {
  admin: 'an admin key',
  producer: 'a producer key',
  worker: 'a worker key',
  read_only: 'a read-only key',
};

const NEED_ROLES: Record<Need, string> = {
  any: 'any key',
  enqueue: 'an admin or producer key',
  work: 'an admin or worker key',
  read_jobs: 'an admin, producer or read-only key',
  job_inputs: 'an admin, producer, worker or read-only key',
  read: 'an admin or read-only key',
  manage: 'an admin key',
  org_read: 'an admin or read-only key with access to every queue',
  org_admin: 'an admin key with access to every queue',
};

/**
 * What one authorized operation may reach. Made by `authorize()`; the
 * transport asks it about the queues and objects the operation addresses.
 */
export class Grant {
  /** null = every queue; else LIKE patterns for `queue_name LIKE ANY (...)` (engine list operations). */
  readonly queueFilter: string[] | null;
  private readonly reads: boolean;

  constructor(readonly auth: AuthContext, readonly operation: Operation) {
    this.queueFilter = everyQueue(auth.queues) ? null : auth.queues.map(likePattern);
    this.reads = READS.has(OPERATIONS[operation]);
  }

  get organizationId(): string {
    return this.auth.organizationId;
  }

  /** True when the key reaches every queue (no filter, no check). */
  get unrestricted(): boolean {
    return this.queueFilter === null;
  }

  allows(queue: string): boolean {
    return this.queueFilter === null || this.auth.queues.some((pattern) => pattern === '*' || matches(pattern, queue));
  }

  /** The request names `queue`: 403 unless the key may use it. */
  queue(queue: string): void {
    if (!this.allows(queue)) throw new AccessDeniedError(`This API key may not use queue "${queue}": use a key whose queues include it`);
  }

  /** The request names several queues: 403 unless the key may use each. */
  queues(queues: Iterable<string>): void {
    for (const queue of queues) this.queue(queue);
  }

  /**
   * Whether an object bound to `queues` is within reach: reads need any of
   * them allowed, changes all of them. An object with no queue at all (an
   * empty workflow, a worker without queues) is reachable only by a key with
   * every queue.
   */
  reaches(queues: readonly string[]): boolean {
    if (this.queueFilter === null) return true;
    if (queues.length === 0) return false;
    return this.reads ? queues.some((q) => this.allows(q)) : queues.every((q) => this.allows(q));
  }

  /** An object addressed by id: itself when within reach, else the same 404 as a missing one. */
  object<T>(found: T | null | undefined, queuesOf: (found: T) => readonly string[], notFound: () => Error): T {
    if (found === null || found === undefined || !this.reaches(queuesOf(found))) throw notFound();
    return found;
  }

  /**
   * Of `ids` (jobs addressed by id, any spelling), those the key may not
   * touch: jobs of other queues. Costs nothing for a key with every queue;
   * otherwise one primary-key lookup. Only an edit (PATCH /jobs/{id})
   * changes a job's queue: the answer holds for the operation that follows
   * unless another credential moves the job in between, and the edit itself
   * checks the key's queues again on the locked row (job-edit.sql). Unknown
   * ids are not listed (the operation finds them missing itself).
   */
  async jobsOutOfReach(db: Db, ids: readonly string[]): Promise<Set<string>> {
    if (this.queueFilter === null || ids.length === 0) return new Set();
    return jobsOutsideQueues(db, this.auth.organizationId, ids, this.queueFilter);
  }

  /** Whether a job addressed by id may be touched (true for unknown ids: the operation finds them missing). */
  async jobInReach(db: Db, id: string): Promise<boolean> {
    return (await this.jobsOutOfReach(db, [id])).size === 0;
  }

  /** One job addressed by id: the same 404 as a missing job when it is out of reach. */
  async job(db: Db, id: string): Promise<void> {
    if (!(await this.jobInReach(db, id))) throw new NotFoundError('Job not found', { job_id: id });
  }

  /**
   * Whether a worker addressed by id may be read or acted for (any of its
   * queues to read, all to act). True for unknown ids, which the operation
   * finds missing; a key with every queue needs no lookup.
   */
  async workerInReach(db: Db, id: string): Promise<boolean> {
    if (this.queueFilter === null) return true;
    const worker = await workerGet(db, this.auth.organizationId, id);
    return worker === null || this.reaches(workerQueues(worker));
  }
}

/** Every queue a worker serves. */
export function workerQueues(worker: WorkerRow): string[] {
  return [worker.queue_name, ...worker.queue_names];
}

/**
 * Authorization for a long-lived call (gRPC streams, realtime streams): the
 * key is read again when the last reading is older than REFRESH_MS, so a
 * revoked key, or one whose queues or role changed, takes effect on open
 * streams within that time, not only on new requests.
 */
export class LiveAuthorization {
  static readonly REFRESH_MS = 1000;
  private readAt = Date.now();

  constructor(private auth: AuthContext, private readonly reread: () => Promise<AuthContext>) {}

  /** The key as last read, fresh enough for one more step; throws 401 once it stops authenticating. */
  async current(): Promise<AuthContext> {
    if (Date.now() - this.readAt >= LiveAuthorization.REFRESH_MS) {
      this.auth = await this.reread();
      this.readAt = Date.now();
    }
    return this.auth;
  }

  /** authorize() with the key as it is now. */
  async grant(operation: Operation): Promise<Grant> {
    return authorize(await this.current(), operation);
  }

  /** The key as last read, without a database read (filters of pushed events). */
  get last(): AuthContext {
    return this.auth;
  }
}

/** The decision: may this key perform `operation` at all? Throws 403 with what key would do; else its Grant. */
export function authorize(auth: AuthContext, operation: Operation): Grant {
  const need = OPERATIONS[operation];
  if (!ROLE_NEEDS[auth.role].has(need)) {
    throw new AccessDeniedError(`This operation (${operation}) needs ${NEED_ROLES[need]}; this is ${ROLE_NAMES[auth.role]}`);
  }
  if ((need === 'org_read' || need === 'org_admin') && !everyQueue(auth.queues)) {
    throw new AccessDeniedError(`This operation (${operation}) concerns the whole organization and needs ${NEED_ROLES[need]}; this key is limited to queues ${auth.queues.join(', ')}`);
  }
  return new Grant(auth, operation);
}
