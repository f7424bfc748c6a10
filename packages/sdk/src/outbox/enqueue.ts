/**
 * Writing a job into the outbox, inside the application's own transaction
 * (docs/transactional-enqueue.md). The row commits or rolls back with the
 * application's other writes; `spool outbox relay` forwards it afterwards.
 */
import { LIMITS, QUEUE_NAME_PATTERN } from '@spool/protocol';
import { toWire } from '../case.js';
import type { CreateJobParams, Json } from '../resources/jobs.js';
import { activeTraceHeaders } from '../tracing.js';
import type { OutboxQueryable } from './schema.js';

/**
 * A job for the outbox: everything `jobs.create` takes (a `jobKey` policy
 * included), plus the ordering key.
 */
export type OutboxJob<P = Json> = CreateJobParams<P> & {
  /**
   * Rows with the same key reach Spool one after another, in the order their
   * transactions committed; a row Spool refused holds back the later rows of
   * its key (only). Default: `jobKey.key` when the job has a `jobKey`.
   */
  orderingKey?: string;
};

/** The columns of one outbox row: what an ORM inserts (Drizzle, Prisma's `$executeRaw`). */
export interface OutboxRow {
  queueName: string;
  /** The job in Spool's wire form (POST /api/v1/jobs, snake_case) without `queue_name`: the `job` jsonb column. */
  job: Record<string, unknown>;
  /** The `ordering_key` column; null lets the table's trigger take `job.job_key.key`. */
  orderingKey: string | null;
}

function refuse(message: string): never {
  throw new TypeError(`outbox job: ${message}`);
}

function intIn(value: unknown, field: string, min: number, max: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) refuse(`${field} must be an integer from ${min} to ${max}, got ${String(value)}`);
}

/**
 * The row for `job`, checked for what would make Spool refuse it later
 * (when the application's transaction has long committed): the queue name,
 * a payload, the numeric ranges, the idempotency key's length, JSON that
 * serializes. Throws a TypeError naming the field. Without a `traceparent`
 * of its own the job takes the active OpenTelemetry span's, as `jobs.create`
 * would have sent it.
 */
export function outboxRow<P = Json>(job: OutboxJob<P>): OutboxRow {
  const { queueName, orderingKey, ...fields } = job;
  if (typeof queueName !== 'string' || !QUEUE_NAME_PATTERN.test(queueName)) {
    refuse(`queueName must be 1-${LIMITS.queueNameMax} letters, digits, "_", "-" or "." (not first), got ${JSON.stringify(queueName)}`);
  }
  if (fields.payload === undefined) refuse('payload is required (null is a payload)');
  intIn(fields.priority, 'priority', LIMITS.priorityMin, LIMITS.priorityMax);
  intIn(fields.maxRetries, 'maxRetries', LIMITS.maxRetriesMin, LIMITS.maxRetriesMax);
  intIn(fields.timeoutSeconds, 'timeoutSeconds', LIMITS.timeoutSecondsMin, LIMITS.timeoutSecondsMax);
  const key = fields.idempotencyKey;
  if (key !== undefined && (typeof key !== 'string' || key.length < 1 || key.length > LIMITS.idempotencyKeyMax)) {
    refuse(`idempotencyKey must be 1-${LIMITS.idempotencyKeyMax} characters`);
  }
  if (orderingKey !== undefined && (typeof orderingKey !== 'string' || orderingKey === '')) refuse('orderingKey must be a non-empty string');
  if (fields.jobKey !== undefined && (fields.jobKey === null || typeof fields.jobKey !== 'object' || typeof fields.jobKey.key !== 'string')) {
    refuse('jobKey must be an object with a string key');
  }
  const wire = toWire(fields) as Record<string, unknown>;
  if (wire.traceparent === undefined) {
    const trace = activeTraceHeaders();
    if (trace) Object.assign(wire, trace);
  }
  let text: string;
  try {
    text = JSON.stringify(wire);
  } catch (err) {
    refuse(`cannot be written as JSON: ${(err as Error).message}`);
  }
  // Through JSON and back: Dates become the ISO strings Spool reads, undefined fields disappear.
  return { queueName, job: JSON.parse(text) as Record<string, unknown>, orderingKey: orderingKey ?? null };
}

/** The INSERT of one outbox row, for any driver with `$1` placeholders (`pg`, Prisma's `$executeRawUnsafe`). */
export function outboxInsert<P = Json>(job: OutboxJob<P>): { text: string; values: [string, string, string | null] } {
  const row = outboxRow(job);
  return {
    text: 'INSERT INTO spool_outbox (queue_name, job, ordering_key) VALUES ($1, $2::jsonb, $3) RETURNING id',
    values: [row.queueName, JSON.stringify(row.job), row.orderingKey],
  };
}

/**
 * Writes `job` into the outbox through `client`, which the application has
 * already opened a transaction on (BEGIN … COMMIT around this call): the job
 * exists exactly when that transaction commits, and the relay forwards it to
 * Spool once. Returns the outbox row's id (a bigint, as a string).
 *
 * ```ts
 * await db.query('BEGIN');
 * await db.query('INSERT INTO orders (id, total) VALUES ($1, $2)', [orderId, total]);
 * await enqueueToOutbox(db, { queueName: 'emails', payload: { orderId }, orderingKey: `order:${orderId}` });
 * await db.query('COMMIT');
 * ```
 */
export async function enqueueToOutbox<P = Json>(client: OutboxQueryable, job: OutboxJob<P>): Promise<{ id: string }> {
  const insert = outboxInsert(job);
  const result = await client.query(insert.text, insert.values);
  return { id: String((result.rows[0] as { id: string | number }).id) };
}
