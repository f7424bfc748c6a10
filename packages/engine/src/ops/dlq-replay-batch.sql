-- One batch of a running replay ($1 organization, $2 replay; $3 its
-- batch_size), when it is due: the next $3 listed jobs are taken off the
-- replay's list and those still dead-lettered (and still in the replay's
-- queue and its creator's queues) move to pending with a fresh retry
-- budget, as POST /jobs/dlq/retry moves them (job-retry-many.sql), with
-- the replay's edits applied. Each moved job gets one `retry` history row
-- with the replay's actor and details {replay_id} (plus what the edits
-- changed, as an `edit` row lists it). The replay's counters advance in
-- the same statement, so a crash either keeps the whole batch or none of
-- it, and a job is never replayed twice by a replay.
--
-- The replay row is taken with SKIP LOCKED: a server whose neighbour is
-- running this replay's batch does nothing (no row). The jobs are locked in
-- id order and waited for (a PATCH or a retry holding one finishes first;
-- a job that then is no longer dead-lettered is skipped).
--
-- Pace: the next batch may start (jobs moved) / per_second after this
-- one was due. A batch that starts late keeps the schedule (up to one
-- batch's worth of time: a replay that waited long does not burst to catch
-- up), so the pace holds on average whichever servers run the batches.
WITH replay AS (
  SELECT r.*
  FROM spool.dlq_replays r
  WHERE r.organization_id = $1 AND r.id = $2 AND r.status = 'running' AND r.next_batch_at <= now()
  FOR UPDATE SKIP LOCKED
),
-- The next $3 positions of the list after those already taken (taken_upto,
-- read from the locked row: current even when a neighbour's batch has just
-- committed), walked in the primary key's order.
batch AS (
  SELECT l.position
  FROM spool.dlq_replay_jobs l
  WHERE l.organization_id = $1 AND l.replay_id = $2 AND l.position > (SELECT taken_upto FROM replay)
  ORDER BY l.position
  LIMIT $3
),
taken AS (
  DELETE FROM spool.dlq_replay_jobs i
  USING batch b
  WHERE i.organization_id = $1 AND i.replay_id = $2 AND i.position = b.position
  RETURNING i.job_id, i.position
),
target AS (
  SELECT j.id
  FROM spool.jobs j
  CROSS JOIN replay r
  WHERE j.organization_id = $1
    AND j.id IN (SELECT job_id FROM taken)
    AND j.status = 'deadletter'
    AND (r.queue_name IS NULL OR j.queue_name = r.queue_name)
    AND (r.queue_scope IS NULL OR j.queue_name LIKE ANY (r.queue_scope))
  ORDER BY j.id
  FOR UPDATE OF j
),
-- The move, as job-retry-many.sql makes it (spool.job_retry, migration 042),
-- with the replay's edits.
retried AS MATERIALIZED (
  SELECT x.*
  FROM replay r
  CROSS JOIN LATERAL spool.job_retry($1, ARRAY(SELECT id FROM target), true, r.created_by, jsonb_build_object('replay_id', r.id),
                                     r.edit_priority, r.edit_max_retries, r.edit_queue_name) x
),
counts AS (
  SELECT (SELECT count(*) FROM taken)::integer AS taken, (SELECT max(position) FROM taken) AS upto,
         (SELECT count(*) FROM retried)::integer AS moved
),
progress AS (
  UPDATE spool.dlq_replays p
  SET done = p.done + c.moved,
      taken_upto = coalesce(c.upto, p.taken_upto),
      skipped = p.skipped + c.taken - c.moved,
      started_at = coalesce(p.started_at, now()),
      next_batch_at = CASE WHEN p.per_second IS NULL THEN now()
                           ELSE greatest(p.next_batch_at, now() - make_interval(secs => p.batch_size::double precision / p.per_second))
                                + make_interval(secs => c.moved::double precision / p.per_second) END,
      -- Every listed job is counted once, done or skipped: the list is empty
      -- when they add up to total.
      status = CASE WHEN p.done + p.skipped + c.taken >= p.total THEN 'completed' ELSE p.status END,
      finished_at = CASE WHEN p.done + p.skipped + c.taken >= p.total THEN now() END,
      error = NULL,
      error_count = 0,
      updated_at = now()
  FROM replay r CROSS JOIN counts c
  WHERE p.organization_id = r.organization_id AND p.id = r.id
  RETURNING p.*
)
SELECT p.*, now() AS read_at, (SELECT moved FROM counts) AS moved,
       -- Replayed jobs whose dependents are recounted after (dlq-replay.ts).
       (SELECT array_agg((job).id) FROM retried WHERE recount) AS recount_ids
FROM progress p;
