/**
 * Spool extension: enqueue inside the application's own database
 * transaction, when its tables live in the same PostgreSQL as Spool's
 * (docs/transactional-enqueue.md). The job exists if and only if the
 * transaction commits; workers are woken at the commit.
 *
 * `client` is whatever runs SQL inside the transaction: a node-postgres
 * `PoolClient` between BEGIN and COMMIT, or anything with the same
 * `query(text, values)` (the SDK does not depend on `pg`).
 */
import { AuthenticationError, AuthorizationError, ConflictError, SpoolApiError, ValidationError } from './errors.js';
import type { CreateJobParams, CreateJobResult, JobStatus, KeyOutcome } from './resources/jobs.js';

export interface SqlClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

export interface TransactionalJobResult extends CreateJobResult {
  status: JobStatus;
}

const iso = (value: Date | string | undefined) => (value instanceof Date ? value.toISOString() : value);

/** The options object of spool.enqueue(): the create body's fields, snake_case, absent ones left out. */
function optionsOf(job: CreateJobParams): Record<string, unknown> {
  if (job.completionWebhook !== undefined) {
    throw new ValidationError({ status: 400, code: 'VALIDATION_ERROR', message: 'completionWebhook is not accepted inside a transaction: enqueue through the API to have its target checked' });
  }
  if (job.parentJobId !== undefined) {
    throw new ValidationError({ status: 400, code: 'VALIDATION_ERROR', message: 'parentJobId is not accepted inside a transaction: enqueue through the API' });
  }
  const key = job.jobKey;
  const options: Record<string, unknown> = {
    priority: job.priority,
    max_retries: job.maxRetries,
    timeout_seconds: job.timeoutSeconds,
    scheduled_at: iso(job.scheduledAt),
    expires_at: iso(job.expiresAt),
    idempotency_key: job.idempotencyKey,
    tags: job.tags,
    concurrency_key: job.concurrencyKey,
    fairness_key: job.fairnessKey,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
    job_key: key && {
      key: key.key,
      mode: key.mode,
      window_secs: 'windowSecs' in key ? key.windowSecs : undefined,
      max_wait_secs: 'maxWaitSecs' in key ? key.maxWaitSecs : undefined,
    },
  };
  return JSON.parse(JSON.stringify(options)) as Record<string, unknown>;
}

/** spool.enqueue()'s SQLSTATEs as the SDK's errors (the same classes the API's answers become). */
function asSpoolError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const init = (status: number, wire: string) => ({ status, code: wire, message, cause: err });
  switch (code) {
    case '28000': return new AuthenticationError(init(401, 'UNAUTHORIZED'));
    case '42501': return new AuthorizationError(init(403, 'FORBIDDEN'));
    case '22023': return new ValidationError(init(400, 'VALIDATION_ERROR'));
    case '54000': return new AuthorizationError(init(403, 'LIMIT_EXCEEDED'));
    case '25001': return new ConflictError(init(409, 'CONFLICT'));
    case '55000': return new SpoolApiError(init(503, 'NOT_READY'));
    default: return err;
  }
}

/**
 * Enqueues `job` in the transaction `client` is in. Call it between your
 * BEGIN and COMMIT; an error aborts the transaction as any failed statement
 * does (use a SAVEPOINT to carry on without the job).
 */
export async function enqueueInTransaction(client: SqlClient, apiKey: string, job: CreateJobParams): Promise<TransactionalJobResult> {
  const options = optionsOf(job);
  let rows: unknown[];
  try {
    ({ rows } = await client.query('SELECT spool.enqueue($1, $2, $3::jsonb, $4::jsonb) AS job', [apiKey, job.queueName, JSON.stringify(job.payload ?? null), JSON.stringify(options)]));
  } catch (err) {
    throw asSpoolError(err);
  }
  const answer = (rows[0] as { job: { id: string; created: boolean; status: JobStatus; key_outcome?: KeyOutcome } }).job;
  return answer.key_outcome
    ? { id: answer.id, created: answer.created, status: answer.status, keyOutcome: answer.key_outcome }
    : { id: answer.id, created: answer.created, status: answer.status };
}
