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
-- the versions it saw are current, and a TID scan reads one heap page per
-- row where a primary-key probe descended the index first (about 2.6 buffer
-- hits per claimed job).
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
-- A capped claim adds the fourth range, the floor's priority up to the
-- floor, read last (below).
-- Each range is its own locked subquery because FOR UPDATE cannot apply to
-- a UNION; Append reads them in order and stops at the LIMIT.
--
-- $6 selects the capped form for a capped queue (queue_config.capped: a
-- concurrency_limit, a rate_limit, a concurrency_key_limit or fair share):
-- the caller has locked that queue's config row
-- (queue-lock-capped.sql) in this transaction, so this statement's fresh
-- snapshot counts every job the previous holder started, and $3 is no more
-- than the tokens the lock took from a rate-limited queue's bucket; those
-- this claim does not use go back (`config_after`). Uncapped claims ($6 false)
-- skip capped queues entirely, and never evaluate the count (init plans run
-- lazily). A paused queue has no room.
WITH RECURSIVE room AS MATERIALIZED (
  SELECT r.n, r.key_limit, r.fair, r.weights, r.cursor,
         -- Over-read for a keyed queue: jobs of a key the batch fills are left out.
         CASE WHEN r.key_limit IS NULL THEN r.n ELSE least(r.n * 4, 400) END AS scan
  FROM (
    SELECT CASE
      WHEN NOT coalesce(qc.enabled, true) THEN 0
      WHEN NOT $6::boolean AND coalesce(qc.capped, false) THEN 0
      WHEN $6::boolean AND qc.concurrency_limit IS NOT NULL THEN greatest(0, least($3::int, qc.concurrency_limit - (
        SELECT count(*) FROM spool.jobs p
        WHERE p.organization_id = $1 AND p.queue_name = $2 AND p.status = 'processing'
      )::int))
      ELSE $3::int END AS n,
      CASE WHEN $6::boolean THEN qc.concurrency_key_limit END AS key_limit,
      $6::boolean AND qc.fairness IS NOT NULL AS fair,
      coalesce(qc.fairness_weights, '{}'::jsonb) AS weights,
      coalesce(qc.fair_cursor, '') AS cursor
    FROM (SELECT 1) one
    LEFT JOIN spool.queue_config qc ON qc.organization_id = $1 AND qc.queue_name = $2
  ) r
),
-- Fair share (capped claims of a queue with `fairness`, migration 029):
-- the highest priority with keyed work, then up to $3 of its keys in turn
-- after fair_cursor, wrapping around, each an index probe of jobs_fair_idx.
fair_top AS MATERIALIZED (
  SELECT f.priority AS p FROM spool.claimable_jobs f
  WHERE (SELECT fair FROM room) AND f.organization_id = $1 AND f.queue_name = $2 AND f.fairness_key IS NOT NULL
  ORDER BY f.priority DESC
  LIMIT 1
),
fair_after (key, i) AS (
  SELECT (SELECT f.fairness_key FROM spool.claimable_jobs f
          WHERE f.organization_id = $1 AND f.queue_name = $2 AND f.fairness_key IS NOT NULL
            AND f.priority = (SELECT p FROM fair_top) AND f.fairness_key > (SELECT cursor FROM room)
          ORDER BY f.fairness_key LIMIT 1), 1
  WHERE EXISTS (SELECT 1 FROM fair_top)
  UNION ALL
  SELECT (SELECT f.fairness_key FROM spool.claimable_jobs f
          WHERE f.organization_id = $1 AND f.queue_name = $2 AND f.fairness_key IS NOT NULL
            AND f.priority = (SELECT p FROM fair_top) AND f.fairness_key > a.key
          ORDER BY f.fairness_key LIMIT 1), a.i + 1
  FROM fair_after a
  WHERE a.key IS NOT NULL AND a.i < (SELECT n FROM room)
),
fair_before (key, i) AS (
  SELECT (SELECT f.fairness_key FROM spool.claimable_jobs f
          WHERE f.organization_id = $1 AND f.queue_name = $2 AND f.fairness_key IS NOT NULL
            AND f.priority = (SELECT p FROM fair_top) AND f.fairness_key <= (SELECT cursor FROM room)
          ORDER BY f.fairness_key LIMIT 1), (SELECT count(key) FROM fair_after) + 1
  WHERE EXISTS (SELECT 1 FROM fair_top) AND (SELECT count(key) FROM fair_after) < (SELECT n FROM room)
  UNION ALL
  SELECT (SELECT f.fairness_key FROM spool.claimable_jobs f
          WHERE f.organization_id = $1 AND f.queue_name = $2 AND f.fairness_key IS NOT NULL
            AND f.priority = (SELECT p FROM fair_top) AND f.fairness_key > b.key AND f.fairness_key <= (SELECT cursor FROM room)
          ORDER BY f.fairness_key LIMIT 1), b.i + 1
  FROM fair_before b
  WHERE b.key IS NOT NULL AND b.i < (SELECT n FROM room)
),
fair_turn AS MATERIALIZED (
  SELECT t.key, t.i AS pos, count(*) OVER () AS keys, coalesce(((SELECT weights FROM room) ->> t.key)::int, 1) AS weight
  FROM (SELECT key, i FROM fair_after UNION ALL SELECT key, i FROM fair_before) t
  WHERE t.key IS NOT NULL
),
floor AS MATERIALIZED (
  -- A fair claim reads only the priorities above its turn's (jobs without
  -- a key) through the ranges below; its turn's own jobs come from `fair`.
  SELECT coalesce(f.priority, (SELECT p FROM fair_top), 101) AS priority, f.created_at, f.id
  FROM (SELECT 1) one
  LEFT JOIN spool.jobs f ON f.id = $7::uuid AND f.organization_id = $1
),
-- A keyed queue's processing jobs per concurrency_key (only read when
-- room.key_limit is set: capped claims of a queue with a
-- concurrency_key_limit).
running AS MATERIALIZED (
  SELECT concurrency_key, count(*)::int AS n
  FROM spool.jobs
  WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing' AND concurrency_key IS NOT NULL
  GROUP BY concurrency_key
),
full_keys AS MATERIALIZED (
  SELECT coalesce(array_agg(concurrency_key), '{}') AS keys FROM running WHERE n >= (SELECT key_limit FROM room)
),
-- Each key of the turn gives its oldest jobs, `weight` per round; `ord`
-- is the round, then the key's place in the turn.
fair AS MATERIALIZED (
  SELECT j.id, j.priority, j.created_at, j.concurrency_key, j.fairness_key, j.tid, ((j.r - 1) / t.weight) * 1000 + t.pos AS ord
  FROM fair_turn t
  CROSS JOIN LATERAL (
    SELECT l.*, row_number() OVER (ORDER BY l.created_at, l.id) AS r
    FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2 AND fairness_key = t.key AND priority = (SELECT p FROM fair_top)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key <> ALL ((SELECT keys FROM full_keys)::text[]))
      ORDER BY created_at, id
      LIMIT t.weight * ceil((SELECT n FROM room)::numeric / t.keys)::int
      FOR UPDATE SKIP LOCKED
    ) l
  ) j
  ORDER BY ord
  LIMIT (SELECT scan FROM room)
),
-- Every range passes over the jobs of full keys (a keyed queue's capped
-- claims), so they wait without blocking the keys behind them.
candidates AS (
  SELECT * FROM (
    SELECT *, 0 AS ord FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority > (SELECT priority FROM floor)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key <> ALL ((SELECT keys FROM full_keys)::text[]))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT scan FROM room)
      FOR UPDATE SKIP LOCKED
    ) higher
    UNION ALL
    SELECT *, 0 AS ord FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority = (SELECT priority FROM floor)
        AND (created_at, id) > (SELECT created_at, id FROM floor)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key <> ALL ((SELECT keys FROM full_keys)::text[]))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT scan FROM room)
      FOR UPDATE SKIP LOCKED
    ) after_floor
    UNION ALL
    SELECT * FROM fair WHERE (SELECT fair FROM room)
    UNION ALL
    SELECT *, 0 AS ord FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority < (SELECT priority FROM floor)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key <> ALL ((SELECT keys FROM full_keys)::text[]))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT CASE WHEN EXISTS (SELECT 1 FROM fair_top) THEN 0 ELSE scan END FROM room)
      FOR UPDATE SKIP LOCKED
    ) lower
    UNION ALL
    -- A capped claim also reads the floor's priority up to the floor, last:
    -- only when the ranges above left its batch short. (An uncapped claim
    -- does this in a second statement, job-claim.ts; a capped one cannot,
    -- as its tokens and its count of running jobs are for one statement.)
    SELECT *, 0 AS ord FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE $6::boolean AND organization_id = $1 AND queue_name = $2
        AND priority = (SELECT priority FROM floor)
        AND (created_at, id) <= (SELECT created_at, id FROM floor)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key <> ALL ((SELECT keys FROM full_keys)::text[]))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT scan FROM room)
      FOR UPDATE SKIP LOCKED
    ) before_floor
  ) c
  LIMIT (SELECT scan FROM room)
),
-- Unkeyed: the candidates. Keyed: in claim order, each key's candidates
-- up to what its running jobs leave of the key limit.
picked AS (
  SELECT id, tid FROM candidates WHERE (SELECT key_limit FROM room) IS NULL
  UNION ALL
  (SELECT k.id, k.tid
   FROM (SELECT c.id, c.tid, c.priority, c.created_at, c.ord, c.concurrency_key,
                row_number() OVER (PARTITION BY c.concurrency_key ORDER BY c.priority DESC, c.ord, c.created_at, c.id) AS nth
         FROM candidates c
         WHERE (SELECT key_limit FROM room) IS NOT NULL) k
   LEFT JOIN running r ON r.concurrency_key = k.concurrency_key
   WHERE k.concurrency_key IS NULL OR k.nth + coalesce(r.n, 0) <= (SELECT key_limit FROM room)
   ORDER BY k.priority DESC, k.ord, k.created_at, k.id
   LIMIT (SELECT n FROM room))
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
),
-- The capped claim's bookkeeping on the config row it has locked, in one
-- UPDATE (a row changed twice in one statement keeps only one change):
-- tokens the claim did not use go back, and a fair claim moves the turn
-- to the last key it served.
config_after AS (
  UPDATE spool.queue_config q
  SET rate_tokens = CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_tokens + ($3::int - (SELECT count(*) FROM claimed)) ELSE q.rate_tokens END,
      fair_cursor = CASE WHEN (SELECT fair FROM room)
                         THEN coalesce((SELECT f.fairness_key FROM fair f JOIN claimed c ON c.id = f.id ORDER BY f.ord DESC LIMIT 1), q.fair_cursor)
                         ELSE q.fair_cursor END
  WHERE $6::boolean AND q.organization_id = $1 AND q.queue_name = $2
    AND ((q.rate_limit IS NOT NULL AND (SELECT count(*) FROM claimed) < $3::int) OR (SELECT fair FROM room))
)
SELECT * FROM claimed ORDER BY priority DESC, created_at ASC, id ASC;
