-- Completes a batch of jobs, each fenced by worker and (when given) lease.
-- `target` checks the fence on this statement's snapshot without locking the
-- rows (a FOR UPDATE there wrote a lock record per job, ~6% of a completion's
-- WAL); the UPDATE then requires the lease `target` saw, and an UPDATE that
-- waited on a concurrent writer re-checks that against the row's newest
-- version, so of several concurrent completes of one job exactly one
-- matches, and the history row names the lease that was actually ended.
-- (So a complete without a lease_id whose job was rescued and re-leased to
-- the same worker id between this statement's snapshot and its write is
-- refused as not_owned: that lease belongs to a new claim.)
-- In the same statement (docs/compatibility.md §3.10, docs/workflows.md):
--  * dependents (of jobs stamped with dependents_xid, migration 024): each
--    dependent's dependencies_remaining drops by the number
--    of its dependencies completed here; mode 'all' is met at zero, mode
--    'any' at the first. The decrement is an UPDATE of the dependent's row,
--    so concurrent completions of its dependencies serialize there and the
--    last one releases it (a count from this statement's snapshot would not
--    see the other's uncommitted completion).
--  * workflows: completed and blocked counters (the status follows from
--    them in migration 011's trigger).
--  * one pg_notify for the statement, only when some job became claimable.
-- `recount` flags a completed job that gained dependents in a transaction
-- this statement's snapshot cannot see (the UPDATE waited on that
-- transaction's row lock and then saw its dependents_xid): the caller
-- recounts those dependents afterwards.
WITH input AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::text[]) AS t(id, worker_id, lease_id, result)
),
-- MATERIALIZED: read once. Inlined into the UPDATE, the planner re-ran this
-- lookup per row through jobs_processing_idx (quadratic in a worker's jobs).
target AS MATERIALIZED (
  SELECT j.id, j.queue_name, j.lease_id AS held_lease_id, i.worker_id, i.result
  FROM spool.jobs j
  JOIN input i ON i.id = j.id
  WHERE j.organization_id = $1
    AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
    -- Owner, lease and deadline (an attempt past its deadline, migration 026,
    -- cannot complete: it is failed as timed out). spool.job_fence spells
    -- "processing" as the lease it implies: spelled as the status, it let the
    -- planner read every processing row of the organization through
    -- jobs_processing_idx and hash-join them, which a generic plan made while few
    -- jobs were processing kept doing when thousands were (each batch then
    -- read all of them). The lookup stays one jobs_pkey probe per item. The
    -- UPDATE need not check the deadline again: it belongs to the claim, and
    -- the UPDATE requires that claim's lease.
    AND spool.job_fence(j, i.worker_id, i.lease_id) = 'held'
),
-- The day each queue's completed jobs purge on (migration 047), looked up
-- once per queue of the batch rather than once per job.
purge AS MATERIALIZED (
  SELECT q.queue_name, spool.job_purge_on($1, q.queue_name, 'completed') AS purge_on
  FROM (SELECT DISTINCT queue_name FROM target) q
),
done AS (
  UPDATE spool.jobs j
  SET status = 'completed',
      phase = 'done',
      purge_on = (SELECT p.purge_on FROM purge p WHERE p.queue_name = j.queue_name),
      result = t.result::jsonb,
      completed_at = now(),
      lease_id = NULL,
      lease_expires_at = NULL,
      cancel_requested_at = NULL,
      updated_at = now()
  FROM target t
  -- The fence, re-checked on the newest row version: the lease `target` saw
  -- is still the job's lease. A lease id is set only while the job is
  -- processing (jobs_lease_iff_processing) and is new for every claim, so an
  -- equal lease means the same claim by the same worker. (Spelling out
  -- status = 'processing' here drew the planner to scan every processing row
  -- through jobs_processing_idx instead of one jobs_pkey lookup per job.)
  WHERE j.id = t.id
    AND j.phase = 'live'
    AND j.lease_id = t.held_lease_id
  RETURNING j.id, j.organization_id, j.queue_name, j.started_at, j.completed_at, j.workflow_id, j.completion_webhook,
            t.held_lease_id, t.worker_id, j.dependents_xid,
            CASE WHEN j.dependents_xid IS NULL THEN false
                 ELSE NOT pg_visible_in_snapshot(j.dependents_xid, pg_current_snapshot()) END AS recount
),
-- One history row per (queue, worker) of the batch, of at most 1024 jobs
-- (migration 021). The lease each completion ended is the one its claim
-- recorded.
history AS (
  INSERT INTO spool.job_history (organization_id, queue_name, event, from_status, to_status, worker_id, job_ids)
  SELECT organization_id, queue_name, 'complete', 'processing', 'completed', worker_id, array_agg(id)
  FROM (SELECT organization_id, queue_name, worker_id, id,
               (row_number() OVER (PARTITION BY queue_name, worker_id) - 1) / 1024 AS chunk
        FROM done) c
  GROUP BY organization_id, queue_name, worker_id, chunk
),
completed_edges AS (
  SELECT d.job_id, count(*)::int AS n
  FROM done
  JOIN spool.job_dependencies d ON d.organization_id = done.organization_id AND d.depends_on_job_id = done.id
  -- Only a job something depends on carries a stamp (migration 024): the
  -- others skip the probe of job_dependencies (about 2 of a completion's ~20
  -- buffer reads).
  WHERE done.dependents_xid IS NOT NULL
  GROUP BY d.job_id
),
released AS (
  UPDATE spool.jobs j
  SET dependencies_remaining = greatest(coalesce(j.dependencies_remaining, 0) - e.n, 0),
      dependencies_met = (j.dependency_mode = 'any' OR coalesce(j.dependencies_remaining, 0) - e.n <= 0),
      updated_at = now()
  FROM completed_edges e
  WHERE j.id = e.job_id
    AND j.organization_id = $1
    AND j.status IN ('pending', 'scheduled')
    AND j.dependencies_met = false
  RETURNING j.id, j.organization_id, j.queue_name, j.status, j.workflow_id, j.dependencies_met
),
workflow_delta AS (
  SELECT workflow_id, sum(completed)::int AS completed, sum(unblocked)::int AS unblocked
  FROM (
    SELECT workflow_id, 1 AS completed, 0 AS unblocked FROM done WHERE workflow_id IS NOT NULL
    UNION ALL
    SELECT workflow_id, 0, 1 FROM released WHERE workflow_id IS NOT NULL AND dependencies_met
  ) x
  GROUP BY workflow_id
),
workflow AS (
  UPDATE spool.workflows w
  SET completed_jobs = w.completed_jobs + d.completed,
      blocked_jobs = greatest(w.blocked_jobs - d.unblocked, 0),
      started_at = coalesce(w.started_at, now()),
      updated_at = now()
  FROM workflow_delta d
  WHERE w.organization_id = $1 AND w.id = d.workflow_id
)
SELECT id, queue_name, started_at, completed_at, workflow_id, completion_webhook, recount, held_lease_id, worker_id,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM released WHERE dependencies_met AND status = 'pending' HAVING count(*) > 0) IS NOT NULL AS notified
FROM done;
