import type { JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';

const statement = sqlFile(import.meta.url, './job-cancel-many.sql');

/**
 * `cancelled`: the job ended and will never run. `cancel_requested`: it is
 * running; its worker learns from the job.cancel_requested event or its next heartbeat. `conflict`: it already
 * finished. `not_found`: no such job in this organization.
 */
export type CancelOutcome = 'cancelled' | 'cancel_requested' | 'conflict' | 'not_found';

export async function jobCancelMany(db: Queryable, organizationId: string, ids: string[], actor: string | null = null): Promise<Map<string, { outcome: CancelOutcome; previousStatus: JobStatus | null }>> {
  const valid = ids.filter(isUuid);
  const rows = valid.length === 0 ? [] : await run<{ id: string; previous_status: JobStatus; outcome: CancelOutcome }>(db, statement, [organizationId, valid, actor]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return new Map(ids.map((id) => {
    const row = byId.get(id);
    return [id, row ? { outcome: row.outcome, previousStatus: row.previous_status } : { outcome: 'not_found' as const, previousStatus: null }];
  }));
}
