import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const statement = sqlFile(import.meta.url, './job-trace-contexts.sql');

export interface JobTraceContext {
  queueName: string;
  /** The job's stored W3C trace context (migration 027); null when it was enqueued outside a trace. */
  trace: { traceparent: string; tracestate: string | null } | null;
}

/** Queue and stored trace context of those of `ids` that exist, by (lowercase) job id. */
export async function jobTraceContexts(db: Queryable, organizationId: string, ids: readonly string[]): Promise<Map<string, JobTraceContext>> {
  const wanted = [...new Set(ids.map((id) => id.toLowerCase()).filter(isUuid))];
  if (wanted.length === 0) return new Map();
  const rows = await run<{ id: string; queue_name: string; traceparent: string | null; tracestate: string | null }>(db, statement, [organizationId, wanted]);
  return new Map(rows.map((row) => [row.id, {
    queueName: row.queue_name,
    trace: row.traceparent === null ? null : { traceparent: row.traceparent, tracestate: row.tracestate },
  }]));
}
