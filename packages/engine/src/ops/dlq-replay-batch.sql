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
  SELECT j.id, j.priority, j.max_retries, j.queue_name
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
retried AS (
  UPDATE spool.jobs j
  SET status = 'pending', in_backoff = false,
      retry_count = 0,
      last_error = NULL,
      scheduled_at = NULL,
      completed_at = NULL,
      result = NULL,
      assigned_worker_id = NULL,
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      priority = coalesce(r.edit_priority, j.priority),
      max_retries = coalesce(r.edit_max_retries, j.max_retries),
      queue_name = coalesce(r.edit_queue_name, j.queue_name),
      updated_at = now()
  FROM target t CROSS JOIN replay r
  WHERE j.id = t.id
  RETURNING j.id, j.organization_id, j.queue_name, j.priority, j.max_retries, j.workflow_id, j.dependents_xid,
            t.priority AS old_priority, t.max_retries AS old_max_retries, t.queue_name AS old_queue_name
),
-- As in job-retry-many.sql: a replayed job's continue edges (migration 035)
-- counted as satisfied while it was dead-lettered; its still blocked
-- dependents wait for it again (only for stamped jobs, migration 024).
rewaiting AS (
  SELECT d.job_id, count(*)::int AS n
  FROM retried x
  JOIN spool.job_dependencies d
    ON d.organization_id = x.organization_id AND d.depends_on_job_id = x.id AND d.on_parent_failure <> 'block'
  WHERE x.dependents_xid IS NOT NULL AND d.on_parent_failure = 'continue'
  GROUP BY d.job_id
),
reblocked AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = coalesce(j.dependencies_remaining, 0) + e.n, updated_at = now()
  FROM rewaiting e
  WHERE j.id = e.job_id AND j.organization_id = $1
    AND j.status IN ('pending', 'scheduled') AND j.dependencies_met = false
),
unlisted AS (
  DELETE FROM spool.dead_letter_queue d USING retried x WHERE d.job_id = x.id
),
edited AS (
  SELECT x.*,
         array_remove(ARRAY[
           CASE WHEN x.priority <> x.old_priority THEN 'priority' END,
           CASE WHEN x.queue_name <> x.old_queue_name THEN 'queue_name' END,
           CASE WHEN x.max_retries <> x.old_max_retries THEN 'max_retries' END
         ], NULL) AS fields
  FROM retried x
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT e.organization_id, e.id, e.queue_name, 'retry', 'deadletter', 'pending', r.created_by,
         jsonb_build_object('replay_id', r.id)
         || CASE WHEN cardinality(e.fields) = 0 THEN '{}'::jsonb ELSE jsonb_build_object(
              'fields', to_jsonb(e.fields),
              'from', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.old_priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.old_queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.old_max_retries END)),
              'to', jsonb_strip_nulls(jsonb_build_object(
                'priority', CASE WHEN 'priority' = ANY (e.fields) THEN e.priority END,
                'queue_name', CASE WHEN 'queue_name' = ANY (e.fields) THEN e.queue_name END,
                'max_retries', CASE WHEN 'max_retries' = ANY (e.fields) THEN e.max_retries END))) END
  FROM edited e CROSS JOIN replay r
),
-- A replayed workflow job no longer counts as failed (as in job-retry-many.sql).
workflow_delta AS (
  SELECT workflow_id, count(*)::int AS failed
  FROM retried
  WHERE workflow_id IS NOT NULL
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET failed_jobs = greatest(w.failed_jobs - d.failed, 0),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
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
       -- Replayed jobs that gained dependents in a transaction this snapshot cannot see: recounted after (dlq-replay.ts).
       (SELECT array_agg(id) FROM retried
         WHERE dependents_xid IS NOT NULL AND NOT pg_visible_in_snapshot(dependents_xid, pg_current_snapshot())) AS recount_ids,
       -- Claimers of the queues the jobs went to wake at once.
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM retried HAVING count(*) > 0) IS NOT NULL AS notified
FROM progress p;
