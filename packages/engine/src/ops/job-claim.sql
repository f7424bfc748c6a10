-- Claims up to $3 due jobs of one queue for worker $4 with a lease of $5
-- seconds. The candidates are locked with SKIP LOCKED in index order (so
-- concurrent claimers pass each other instead of queueing), then the UPDATE
-- hands each row a fresh lease_id: the fencing token for everything after.
-- Candidates come from spool.claimable_jobs, whose WHERE is jobs_claim_idx's
-- predicate (migration 015). The UPDATE finds the picked rows by
-- `ctid = ANY (ARRAY(...))`, not a join: in a generic plan LIMIT $3 is
-- estimated at 10% of the queue, and a join then became a hash join over a
-- sequential scan of the whole table (860 ms instead of 4 ms at 2M rows,
-- docs/claim-explain.md); the array form is always a direct fetch. By tuple
-- id (migration 044), not by id: the rows are locked by this statement, so
-- no other transaction changes them before the UPDATE, and a TID scan reads
-- one heap page per row where a primary-key probe descended the index first
-- (about 2.6 buffer hits per claimed job). One case differs from the probe:
-- a row that another transaction changed after this statement's snapshot
-- and that is still claimable (a priority edit, a replace) is locked in its
-- newest version, which the TID scan under this snapshot does not see; it is
-- left pending for the next claim (never claimed twice, never lost), and a
-- capped claim gives back the room and tokens it did not use.
--
-- $6, the claim floor (job-claim.ts): the last job of this queue's previous
-- full batch, or NULL. The index order (priority DESC, created_at, id) is
-- read in three ranges: higher priorities than the floor's, the floor's
-- priority after the floor, lower priorities. Together they are every
-- candidate except those of the floor's priority at or before the floor,
-- where a drain leaves the entries of the jobs it claimed: while any
-- transaction holds back the xmin horizon those entries cannot be pruned,
-- and a scan from the start walks all of them (S7 in BENCHMARKS.md). With no
-- floor (or a floor job gone), the floor priority is 101, above the range
-- every job's CHECK allows, and the third range alone is the whole queue.
-- When the three come back short, job-claim.ts reads the queue once more
-- from its start (no floor); the capped claim reads the fourth range, the
-- floor's priority up to the floor, in its own statement.
-- Each range is its own locked subquery because FOR UPDATE cannot apply to
-- a UNION; Append reads them in order and stops at the LIMIT.
--
-- This is the claim of every queue that is not capped; a capped queue
-- (queue_config.capped: a concurrency_limit, a rate_limit, a
-- concurrency_key_limit or fair share) is claimed by job-claim-capped.sql,
-- and this statement takes nothing from one (nor from a paused queue). A
-- claim that takes nothing answers one row without a job whose
-- queue_capped says whether the queue is capped, so that the caller claims
-- it capped without another round trip. The
-- two are separate statements, not branches of one, because PostgreSQL
-- initializes every node of a plan before it runs it: inside the capped
-- form's plan a claim of one job took about twice as long
-- (docs/performance.md, "The uncapped claim as a statement of its own").
WITH room AS MATERIALIZED (
  SELECT CASE WHEN NOT coalesce(qc.enabled, true) OR coalesce(qc.capped, false) THEN 0 ELSE $3::int END AS n,
         coalesce(qc.enabled AND qc.capped, false) AS capped
  FROM (SELECT 1) one
  LEFT JOIN spool.queue_config qc ON qc.organization_id = $1 AND qc.queue_name = $2
),
floor AS MATERIALIZED (
  SELECT coalesce(f.priority, 101) AS priority, f.created_at, f.id
  FROM (SELECT 1) one
  LEFT JOIN spool.jobs f ON f.id = $6::uuid AND f.organization_id = $1
),
picked AS (
  SELECT * FROM (
    SELECT * FROM (
      SELECT tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority > (SELECT priority FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) higher
    UNION ALL
    SELECT * FROM (
      SELECT tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority = (SELECT priority FROM floor)
        AND (created_at, id) > (SELECT created_at, id FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) after_floor
    UNION ALL
    SELECT * FROM (
      SELECT tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority < (SELECT priority FROM floor)
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT n FROM room)
      FOR UPDATE SKIP LOCKED
    ) lower
  ) c
  LIMIT (SELECT n FROM room)
),
claimed AS (
  -- The live partition itself: a tuple id means something only within one.
  UPDATE spool.jobs_live j
  SET status = 'processing',
      assigned_worker_id = $4,
      lease_id = gen_random_uuid(),
      -- An enforced timeout (migration 026) is the attempt's deadline, which
      -- the lease never outlives; for a job without one least() ignores the NULL.
      lease_expires_at = least(now() + make_interval(secs => $5), CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END),
      deadline_at = CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END,
      started_at = coalesce(j.started_at, now()),
      updated_at = now()
  WHERE j.ctid = ANY (ARRAY(SELECT tid FROM picked))
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
SELECT c.*, r.capped AS queue_capped
FROM room r
LEFT JOIN claimed c ON true
ORDER BY c.priority DESC, c.created_at ASC, c.id ASC;
