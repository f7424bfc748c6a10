import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import type { FenceFailure } from './fence.js';
import { explainFenceFailures } from './fence.js';
import { jobDependentsRecount } from './job-dependencies.js';

const statement = sqlFile(import.meta.url, './job-complete-many.sql');

export interface CompleteItem {
  id: string;
  workerId: string;
  /** When given, must be the job's current lease (fencing token). */
  leaseId?: string | null;
  /** Stored as the job's result; undefined stores null. */
  result?: unknown;
}

export type CompleteOutcome =
  | { id: string; ok: true; queueName: string; startedAt: Date | null; completedAt: Date }
  | { id: string; ok: false; reason: FenceFailure };

/**
 * Completes each job that is processing under the caller's worker and lease.
 * One outcome per item, in order; refused items say why and change nothing.
 * Dependents whose last needed dependency completes here become claimable,
 * and workflow counters and status move, in the same statement.
 */
export async function jobCompleteMany(db: Queryable, organizationId: string, items: CompleteItem[]): Promise<CompleteOutcome[]> {
  const valid = items.filter((item) => isUuid(item.id) && (item.leaseId == null || isUuid(item.leaseId)));
  const rows = valid.length === 0 ? [] : await run<{ id: string; queue_name: string; started_at: Date | null; completed_at: Date; recount: boolean; held_lease_id: string | null; worker_id: string }>(
    db,
    statement,
    [
      organizationId,
      valid.map((item) => item.id),
      valid.map((item) => item.workerId),
      valid.map((item) => item.leaseId ?? null),
      valid.map((item) => (item.result === undefined ? null : JSON.stringify(item.result))),
    ],
  );
  const done = new Map(rows.map((row) => [row.id, row]));
  // Rare: a dependency was added to one of these jobs while it was being
  // completed; the statement could not see that edge (see the SQL).
  await jobDependentsRecount(db, organizationId, rows.filter((row) => row.recount).map((row) => row.id));
  // A job listed twice completes once: only the first item that matches the
  // fence the row was completed under is told so; the others are refused.
  const credited = new Set<string>();
  const accepted = items.map((item) => {
    const row = done.get(item.id);
    const matches = row !== undefined && !credited.has(item.id) && row.worker_id === item.workerId
      && (item.leaseId == null || item.leaseId === row.held_lease_id);
    if (matches) credited.add(item.id);
    return matches ? row : undefined;
  });
  const refused = items.filter((item, i) => accepted[i] === undefined);
  const reasons = await explainFenceFailures(db, organizationId, refused.filter((item) => isUuid(item.id)));
  return items.map((item, i): CompleteOutcome => {
    const row = accepted[i];
    if (row) return { id: item.id, ok: true, queueName: row.queue_name, startedAt: row.started_at, completedAt: row.completed_at };
    return { id: item.id, ok: false, reason: reasons.get(item.id) ?? (isUuid(item.id) ? 'lease_mismatch' : 'not_found') };
  });
}
