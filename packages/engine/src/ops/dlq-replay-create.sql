-- Creates a paced DLQ replay (docs/jobs-api.md, "Paced DLQ replays") and
-- lists the jobs it will move: the organization's dead-lettered jobs that
-- match the filter (NULL = not filtered on), oldest first, at most $8, only
-- of the caller's queues ($9: LIKE patterns, NULL = all). Filter: $3 queue,
-- $4 explicit job ids, $5 / $6 created at or after / before, $7 a
-- last_error ILIKE pattern. The list is fixed here: a job dead-lettered
-- later is not part of this replay, and `total` is its length. A replay
-- that matched nothing is created completed, so that the caller still gets
-- an object to show.
--
-- Refused (no row) while the organization has $17 replays running; two
-- creates racing at that bound may both pass, which the bound tolerates
-- (it keeps a runaway script from piling up replays, nothing more).
WITH room AS (
  SELECT count(*) < $17 AS ok
  FROM (SELECT 1 FROM spool.dlq_replays WHERE organization_id = $1 AND status = 'running' LIMIT $17) AS running
),
picked AS (
  SELECT j.id, (row_number() OVER (ORDER BY j.created_at, j.id))::integer AS position
  FROM spool.jobs j
  WHERE j.organization_id = $1
    AND j.status = 'deadletter'
    AND ($3::text IS NULL OR j.queue_name = $3::text)
    AND ($4::uuid[] IS NULL OR j.id = ANY ($4::uuid[]))
    AND ($5::timestamptz IS NULL OR j.created_at >= $5::timestamptz)
    AND ($6::timestamptz IS NULL OR j.created_at < $6::timestamptz)
    AND ($7::text IS NULL OR j.last_error ILIKE $7::text)
    AND ($9::text[] IS NULL OR j.queue_name LIKE ANY ($9::text[]))
    AND (SELECT ok FROM room)
  ORDER BY j.created_at, j.id
  LIMIT $8
),
replay AS (
  INSERT INTO spool.dlq_replays (organization_id, id, status, queue_name, job_ids_count, error_contains, created_after, created_before,
                                 max_jobs, queue_scope, edit_priority, edit_max_retries, edit_queue_name, per_second, batch_size,
                                 total, created_by, finished_at)
  SELECT $1, $2, CASE WHEN n.total = 0 THEN 'completed' ELSE 'running' END, $3, cardinality($4::uuid[]), $10, $5, $6,
         $8, $9, $11, $12, $13, $14, $15,
         n.total, $16, CASE WHEN n.total = 0 THEN now() END
  FROM (SELECT count(*)::integer AS total FROM picked) AS n
  WHERE (SELECT ok FROM room)
  RETURNING *
),
listed AS (
  INSERT INTO spool.dlq_replay_jobs (organization_id, replay_id, position, job_id)
  SELECT r.organization_id, r.id, p.position, p.id
  FROM replay r CROSS JOIN picked p
)
SELECT r.*, now() AS read_at FROM replay r;
