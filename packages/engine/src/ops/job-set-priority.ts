import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const statement = sqlFile(import.meta.url, './job-set-priority.sql');

/**
 * Changes a not-yet-started job's priority; null when no such pending/scheduled
 * job. A change is written to the job's history as an `edit` by `actor` (the
 * credential, as for PATCH /jobs/{id}; null for none).
 */
export async function jobSetPriority(db: Queryable, organizationId: string, id: string, priority: number, actor: string | null = null): Promise<{ oldPriority: number; newPriority: number } | null> {
  if (!isUuid(id)) return null;
  const rows = await run<{ old_priority: number; new_priority: number }>(db, statement, [organizationId, id, priority, actor]);
  const row = rows[0];
  return row ? { oldPriority: row.old_priority, newPriority: row.new_priority } : null;
}
