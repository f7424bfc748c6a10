-- The capped claim: up to $3 due jobs of a capped queue (queue_config.capped:
-- a concurrency_limit, a rate_limit, a concurrency_key_limit or fair share)
-- for worker $4 with a lease of $5 seconds, $6 the claim floor. How jobs are
-- picked, locked and leased, and what the floor is, is job-claim.sql's (the
-- uncapped claim, which every other queue takes): this statement reads the
-- same index ranges and adds the queue's limits. It is a statement of its
-- own because PostgreSQL initializes a plan's every node before running
-- it, branches that a one-time filter never runs included: the capped
-- form's plan is several times the uncapped one's, and an uncapped claim
-- of one job took twice as long within it (docs/performance.md, "The
-- uncapped claim as a statement of its own").
--
-- Its first step locks that queue's config row (`locked`; the lock holds to
-- the end of the transaction), so capped claims of a queue take turns:
-- without it two claimers could each count the same free room or the same
-- tokens. Lock, claim and the bookkeeping on the config row are one
-- statement, so the lock is held for one statement's execution, not for
-- round trips to the caller (docs/performance.md); on the pool the lock is
-- taken one statement earlier in the same transaction (queue-lock-capped.sql),
-- one round trip longer, so that this statement's snapshot follows the wait
-- (what follows about a snapshot from before the wait then holds only on a
-- caller's own client). The locked row is the
-- latest version (READ COMMITTED rereads a row it waited for), but the rest
-- of the statement reads the snapshot taken before the wait: the previous
-- holder's claims are not in it. Its claimed jobs are passed over anyway
-- (FOR UPDATE rechecks the claim predicate on a changed row); the counts of
-- processing jobs come from functions that take a snapshot of their own,
-- after the lock (migration 041). A rate-limited queue's bucket is refilled
-- to clock_timestamp() (the time waited for the lock refills it too), the
-- claim takes at most its whole tokens, and what is left is written back
-- (`config_after`). It returns a row even when it claims nothing (the
-- `cap_` columns; job columns NULL), and no row when the queue is not
-- capped or is paused after all: the caller then claims uncapped. A paused
-- queue has no room.
-- A capped claim also reads the fourth range, the floor's priority up to
-- the floor, last (below): an uncapped claim does that in a second
-- statement when it comes back short, a capped one cannot, as its tokens
-- and its count of running jobs are for one statement.
WITH RECURSIVE locked AS MATERIALIZED (
  SELECT q.id, q.organization_id, q.queue_name, q.concurrency_limit, q.concurrency_key_limit,
         q.fairness, q.fairness_weights, q.fair_cursor, q.rate_limit,
         spool.rate_burst(q.rate_limit, q.rate_limit_burst) AS burst, q.rate_tokens, q.rate_refilled_at
  FROM spool.queue_config q
  WHERE q.organization_id = $1 AND q.queue_name = $2 AND q.enabled AND q.capped
  FOR UPDATE
),
bucket AS MATERIALIZED (
  SELECT t.at, t.available, least($3::int, floor(t.available)::int) AS reserved
  FROM (SELECT c.at, spool.rate_tokens_at(l.rate_tokens, l.rate_refilled_at, l.rate_limit, l.burst, c.at) AS available
        FROM locked l, LATERAL (SELECT clock_timestamp() AS at) c
        WHERE l.rate_limit IS NOT NULL) t
),
room AS MATERIALIZED (
  SELECT r.n, r.key_limit, r.fair, r.weights, r.cursor,
         -- Over-read for a keyed queue: jobs of a key the batch fills are left out.
         CASE WHEN r.key_limit IS NULL THEN r.n ELSE least(r.n * 4, 400) END AS scan
  FROM (
    -- Exactly one row: no room without the lock.
    SELECT CASE WHEN l.id IS NULL THEN 0 ELSE greatest(0, least(
             coalesce((SELECT reserved FROM bucket), $3::int),
             CASE WHEN l.concurrency_limit IS NOT NULL THEN l.concurrency_limit - spool.queue_processing_now(l.organization_id, l.queue_name) END)) END AS n,
           l.concurrency_key_limit AS key_limit, coalesce(l.fairness IS NOT NULL, false) AS fair,
           coalesce(l.fairness_weights, '{}'::jsonb) AS weights, coalesce(l.fair_cursor, '') AS cursor
    FROM (SELECT 1) one
    LEFT JOIN locked l ON true
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
  -- a key) through the ranges below; its turn's own jobs come from `fair`,
  -- and it takes no floor.
  SELECT coalesce(f.priority, (SELECT p FROM fair_top), 101) AS priority, f.created_at, f.id
  FROM (SELECT 1) one
  LEFT JOIN spool.jobs f ON f.id = $6::uuid AND f.organization_id = $1 AND NOT (SELECT fair FROM room)
),
-- A keyed queue's processing jobs per concurrency_key, counted after the
-- lock (only read when room.key_limit is set: capped claims of a queue with
-- a concurrency_key_limit).
running AS MATERIALIZED (
  SELECT k.concurrency_key, k.n
  FROM locked l CROSS JOIN LATERAL spool.queue_processing_keys_now(l.organization_id, l.queue_name) k
  WHERE l.concurrency_key_limit IS NOT NULL
),
-- Keys at their limit: every range passes over their jobs, through a
-- hashed NOT IN (a `<> ALL` of an array compared each candidate with every
-- full key).
full_keys AS MATERIALIZED (
  SELECT concurrency_key FROM running WHERE n >= (SELECT key_limit FROM room)
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
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key NOT IN (SELECT f.concurrency_key FROM full_keys f))
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
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key NOT IN (SELECT f.concurrency_key FROM full_keys f))
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
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key NOT IN (SELECT f.concurrency_key FROM full_keys f))
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
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key NOT IN (SELECT f.concurrency_key FROM full_keys f))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT CASE WHEN EXISTS (SELECT 1 FROM fair_top) THEN 0 ELSE scan END FROM room)
      FOR UPDATE SKIP LOCKED
    ) lower
    UNION ALL
    -- The floor's priority up to the floor, last: only when the ranges
    -- above left the batch short.
    SELECT *, 0 AS ord FROM (
      SELECT id, priority, created_at, concurrency_key, fairness_key, tid FROM spool.claimable_jobs
      WHERE organization_id = $1 AND queue_name = $2
        AND priority = (SELECT priority FROM floor)
        AND (created_at, id) <= (SELECT created_at, id FROM floor)
        AND ((SELECT key_limit FROM room) IS NULL OR concurrency_key IS NULL OR concurrency_key NOT IN (SELECT f.concurrency_key FROM full_keys f))
      ORDER BY priority DESC, created_at ASC, id ASC
      LIMIT (SELECT scan FROM room)
      FOR UPDATE SKIP LOCKED
    ) before_floor
  ) c
  LIMIT (SELECT scan FROM room)
),
-- How many candidates a keyed claim picks from: the batch's own number
-- when the first that many repeat no key (each then has room: its key is
-- not full), else the over-read. The candidates are locked as they are
-- read, and only as far as they are read, so a queue of distinct keys
-- locks its batch and no more.
keyed_pool AS MATERIALIZED (
  SELECT CASE WHEN count(f.concurrency_key) = count(DISTINCT f.concurrency_key) THEN (SELECT n FROM room) ELSE (SELECT scan FROM room) END AS size
  FROM (SELECT concurrency_key FROM candidates LIMIT (SELECT n FROM room)) f
),
-- Unkeyed: the candidates. Keyed: in claim order, each key's candidates
-- up to what its running jobs leave of the key limit.
picked AS (
  SELECT id, tid FROM candidates WHERE (SELECT key_limit FROM room) IS NULL
  UNION ALL
  (SELECT k.id, k.tid
   FROM (SELECT c.id, c.tid, c.priority, c.created_at, c.ord, c.concurrency_key,
                row_number() OVER (PARTITION BY c.concurrency_key ORDER BY c.priority DESC, c.ord, c.created_at, c.id) AS nth
         FROM (SELECT * FROM candidates LIMIT (SELECT size FROM keyed_pool)) c
         WHERE (SELECT key_limit FROM room) IS NOT NULL) k
   LEFT JOIN running r ON r.concurrency_key = k.concurrency_key
   WHERE k.concurrency_key IS NULL OR k.nth + coalesce(r.n, 0) <= (SELECT key_limit FROM room)
   ORDER BY k.priority DESC, k.ord, k.created_at, k.id
   LIMIT (SELECT n FROM room))
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
),
-- The capped claim's bookkeeping on the config row it has locked, in one
-- UPDATE (a row changed twice in one statement keeps only one change): the
-- bucket keeps what this claim did not take, and a fair claim moves the
-- turn to the last key it served.
config_after AS (
  UPDATE spool.queue_config q
  SET rate_tokens = CASE WHEN q.rate_limit IS NOT NULL THEN (SELECT available FROM bucket) - (SELECT count(*) FROM claimed) ELSE q.rate_tokens END,
      rate_refilled_at = CASE WHEN q.rate_limit IS NOT NULL THEN (SELECT at FROM bucket) ELSE q.rate_refilled_at END,
      fair_cursor = CASE WHEN (SELECT fair FROM room)
                         THEN coalesce((SELECT f.fairness_key FROM fair f JOIN claimed c ON c.id = f.id ORDER BY f.ord DESC LIMIT 1), q.fair_cursor)
                         ELSE q.fair_cursor END
  WHERE q.id = (SELECT id FROM locked)
    AND (EXISTS (SELECT 1 FROM bucket) OR (SELECT fair FROM room))
)
-- The facts for the caller: whether the queue is fair, and a rate-limited
-- queue's tokens taken, left and refill rate (job-claim.ts).
SELECT c.*, l.fairness::text AS cap_fairness, b.reserved::int AS cap_reserved,
       (b.available - (SELECT count(*) FROM claimed))::float8 AS cap_tokens, l.rate_limit::int AS cap_rate, l.burst::int AS cap_burst
FROM locked l
LEFT JOIN bucket b ON true
LEFT JOIN claimed c ON true
ORDER BY priority DESC, created_at ASC, id ASC;
