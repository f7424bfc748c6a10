import { Type, type Static } from 'typebox';
import type { DlqReplayRow } from '@spool/engine';
import { DateTime, MaxRetries, Priority, QueueName, nullable } from './common.js';

const NullableInt = nullable(Type.Integer());
const NullableString = nullable(Type.String());
const NullableTime = nullable(DateTime);

/** What a replay changes on each job it replays (docs/jobs-api.md, "Paced DLQ replays"). */
/** running, then completed; or cancelled, or failed. */
export const DlqReplayStatusSchema = Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('cancelled'), Type.Literal('failed')]);

export const ReplayEditsSchema = Type.Object({
  priority: Type.Optional(nullable(Priority)),
  max_retries: Type.Optional(nullable(MaxRetries)),
  queue_name: Type.Optional(nullable(QueueName)),
}, {
  additionalProperties: false,
  description: 'Applied to each job as it is replayed, as PATCH /jobs/{id} would (null or absent: unchanged). queue_name moves the job; the key must reach that queue too. '
    + 'Payloads are not edited in bulk: PATCH each job first.',
});

/** A paced DLQ replay (GET /jobs/dlq/replays/{id}). */
export const DlqReplaySchema = Type.Object({
  id: Type.String(),
  status: Type.Union(DlqReplayStatusSchema.anyOf, { description: 'running, then completed; or cancelled (DELETE) or failed (5 batches in a row failed: see error)' }),
  queue_name: nullable(Type.String()),
  job_ids_count: Type.Union([Type.Integer(), Type.Null()], { description: 'how many job_ids the request listed (null: not by ids)' }),
  error_contains: NullableString,
  created_after: NullableTime,
  created_before: NullableTime,
  limit: Type.Integer({ description: 'at most this many jobs, oldest first' }),
  edits: Type.Object({ priority: NullableInt, max_retries: NullableInt, queue_name: NullableString }),
  per_second: Type.Union([Type.Integer(), Type.Null()], { description: 'the pace, across every server (null: as fast as batches go)' }),
  batch_size: Type.Integer({ description: 'jobs per batch: about a tenth of per_second, at most 1000' }),
  total: Type.Integer({ description: 'jobs listed when the replay was created (dead-lettered and matching then)' }),
  done: Type.Integer({ description: 'jobs replayed so far' }),
  skipped: Type.Integer({ description: 'listed jobs that were no longer dead-lettered when their turn came (retried, purged or moved meanwhile)' }),
  remaining: Type.Integer({ description: 'total - done - skipped; of a cancelled or failed replay, the jobs it left in the DLQ' }),
  progress: Type.Number({ description: 'percent of the listed jobs handled (done + skipped), 0..100' }),
  rate: Type.Union([Type.Number(), Type.Null()], { description: 'jobs replayed per second since the replay was created (null before its first batch)' }),
  eta_seconds: Type.Union([Type.Number(), Type.Null()], { description: 'seconds until a running replay is done, at per_second (else at the rate so far); null when finished or unknown' }),
  created_by: Type.String({ description: 'the credential that created it, as job history `actor` (api_key:<id>)' }),
  cancelled_by: NullableString,
  error: Type.Union([Type.String(), Type.Null()], { description: 'why the last batch failed' }),
  created_at: DateTime,
  started_at: NullableTime,
  updated_at: DateTime,
  finished_at: NullableTime,
});
export type DlqReplayWire = Static<typeof DlqReplaySchema>;

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());
const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

/** A replay as the API shows it, with its progress, rate and ETA as of the database's clock when it was read. */
export function dlqReplayToWire(row: DlqReplayRow): DlqReplayWire {
  const remaining = Math.max(0, row.total - row.done - row.skipped);
  const now = row.read_at.getTime();
  // Since the replay was created (what its caller waited), and a paced batch counted until the next one
  // may start (next_batch_at): N batches span N intervals, not N - 1, so a paced replay's rate is its pace.
  const end = Math.max((row.finished_at ?? row.read_at).getTime(), row.per_second ? row.next_batch_at.getTime() : 0);
  const elapsed = row.started_at ? (end - row.created_at.getTime()) / 1000 : 0;
  const rate = row.started_at && elapsed > 0 ? round(row.done / elapsed, 1) : null;
  let eta: number | null = null;
  if (row.status === 'running') {
    const pace = row.per_second ?? (rate && rate > 0 ? rate : null);
    if (pace) eta = round(Math.max(0, remaining / pace, (row.next_batch_at.getTime() - now) / 1000), 1);
    if (remaining === 0) eta = 0;
  }
  return {
    id: row.id,
    status: row.status,
    queue_name: row.queue_name,
    job_ids_count: row.job_ids_count,
    error_contains: row.error_contains,
    created_after: iso(row.created_after),
    created_before: iso(row.created_before),
    limit: row.max_jobs,
    edits: { priority: row.edit_priority, max_retries: row.edit_max_retries, queue_name: row.edit_queue_name },
    per_second: row.per_second,
    batch_size: row.batch_size,
    total: row.total,
    done: row.done,
    skipped: row.skipped,
    remaining,
    progress: row.total === 0 ? 100 : round(((row.done + row.skipped) / row.total) * 100, 2),
    rate,
    eta_seconds: eta,
    created_by: row.created_by,
    cancelled_by: row.cancelled_by,
    error: row.error,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    updated_at: row.updated_at.toISOString(),
    finished_at: iso(row.finished_at),
  };
}
