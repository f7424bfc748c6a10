import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const list = sqlFile(import.meta.url, './dlq-list.sql');
const purge = sqlFile(import.meta.url, './dlq-purge.sql');

export interface DlqJob {
  id: string;
  queue_name: string;
  status: 'deadletter';
  priority: number;
  retry_count: number;
  max_retries: number;
  created_at: Date;
  scheduled_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  last_error: string | null;
  payload: unknown;
}

/** Dead-lettered jobs, newest first. */
export async function dlqList(db: Queryable, params: { organizationId: string; queueName?: string | null; limit: number; offset: number; queues?: string[] | null }): Promise<DlqJob[]> {
  return run<DlqJob>(db, list, [params.organizationId, params.queueName ?? null, params.limit, params.offset, params.queues ?? null]);
}

/** Deletes up to `limit` dead-lettered jobs, oldest first; returns how many. */
export async function dlqPurge(db: Queryable, params: { organizationId: string; queueName?: string | null; olderThan?: Date | null; limit: number; queues?: string[] | null; actor?: string | null }): Promise<number> {
  const rows = await run<{ purged_count: number }>(db, purge, [params.organizationId, params.queueName ?? null, params.olderThan ?? null, params.limit, params.queues ?? null, params.actor ?? null]);
  return rows[0]?.purged_count ?? 0;
}
