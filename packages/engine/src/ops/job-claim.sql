-- Claims up to $3 due jobs of one queue for worker $4 with a lease of $5
-- seconds. The candidates are locked with SKIP LOCKED in index order (so
-- concurrent claimers pass each other instead of queueing), then the UPDATE
-- hands each row a fresh lease_id: the fencing token for everything after.
-- Candidates come from spool.claimable_jobs, whose WHERE is jobs_claim_idx's
-- predicate (migration 015). The UPDATE finds the picked rows by `id = ANY (ARRAY(...))`, not a join: in a generic
-- plan LIMIT $3 is estimated at 10% of the queue, and a join then became a
-- hash join over a sequential scan of the whole table (860 ms instead of
-- 4 ms at 2M rows, docs/claim-explain.md); the array form is always a
-- primary-key index scan.
--
-- $7, the claim floor (job-claim.ts): the last job of this queue's previous
-- full batch, or NULL. The index order (priority DESC, created_at, id) is
-- read in three ranges: higher priorities than the floor's, the floor's
-- priority after the floor, lower priorities. Together they are every
-- candidate except those of the floor's priority at or before the floor,
-- where a drain leaves the entries of the jobs it claimed: while any
-- transaction holds back the xmin horizon those entries cannot be pruned,
-- and a scan from the start walks all of them (S7 in BENCHMARKS.md). With no
-- floor (or a floor job gone), the floor priority is 101, above the range
-- every job's CHECK allows, and the third range alone is the whole queue.
-- Each range is its own locked subquery because FOR UPDATE cannot apply to
-- a UNION; Append reads them in order and stops at the LIMIT.
--
-- $6 selects the capped form for a queue with a concurrency_limit: the
-- caller has locked that queue's config row (queue-lock-capped.sql) in
-- this transaction, so this statement's fresh snapshot counts every job
-- the previous holder started. Uncapped claims ($6 false) skip capped
-- queues entirely, and never evaluate the count (init plans run lazily).
-- A paused queue has no room.
WITH room AS MATERIALIZED (
  SELECT CASE
    WHEN EXISTS (
      SELECT 1 FROM spool.queue_config qc
      WHERE qc.organization_id = $1 AND qc.queue_name = $2
        AND (NOT qc.enabled OR (qc.concurrency_limit IS NOT NULL AND NOT $6::boolean))
    ) THEN 0
    WHEN $6::boolean THEN greatest(0, least($3::int, (
      SELECT qc.concurrency_limit FROM spool.queue_config qc
      WHERE qc.organization_id = $1 AND qc.queue_name = $2
    ) - (
      SELECT count(*) FROM spool.jobs p
      WHERE p.organization_id = $1 AND p.queue_name = $2 AND p.status = 'processing'
    )::int))
    ELSE $3::int END AS n
),
floor AS MATERIALIZED (
  SELECT coalesce(f.priority, 101) AS priority, f.created_at, f.id
  FROM (SELECT 1) one
  LEFT JOIN spool.jobs f ON f.id = $7::uuid AND f.organization_id = $1
),
picked AS (
  SELECT id FROM (
    SELECT id FROM (
      SELECT id FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority > (SELECT priority FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) higher
    UNION ALL
    SELECT id FROM (
      SELECT id FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority = (SELECT priority FROM floor)
        AND (created_at, id) > (SELECT created_at, id FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) after_floor
    UNION ALL
    SELECT id FROM (
      SELECT id FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority < (SELECT priority FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) lower
  ) candidates
  LIMIT (SELECT n FROM room)
),
claimed AS (
  UPDATE spool.jobs j
  SET status = 'processing',
      assigned_worker_id = $4,
      lease_id = gen_random_uuid(),
      -- An enforced timeout (migration 026) is the attempt's deadline, which
      -- the lease never outlives; for a job without one least() ignores the NULL.
      lease_expires_at = least(now() + make_interval(secs => $5), CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END),
      deadline_at = CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END,
      started_at = coalesce(j.started_at, now()),
      updated_at = now()
  WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
  RETURNING j.*
),
-- A job's first claim (started_at is this statement's now()) goes into one
-- row for the batch (migration 021: at most 100 jobs, one queue, one
-- worker); a claim that re-runs a job (after a retry, an expired lease or a
-- release) gets its own row, since the job row keeps only the first start.
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, job_ids, lease_ids)
  SELECT organization_id, NULL, queue_name, 'claim', 'pending', 'processing', $4, NULL, array_agg(id), array_agg(lease_id)
  FROM claimed WHERE started_at = now()
  GROUP BY organization_id, queue_name
  UNION ALL
  SELECT organization_id, id, queue_name, 'claim', 'pending', 'processing', assigned_worker_id, lease_id, NULL, NULL
  FROM claimed WHERE started_at < now()
)
SELECT * FROM claimed ORDER BY priority DESC, created_at ASC, id ASC;
