-- Claims up to $3 due jobs across the queues $2 (distinct names) for
-- worker $4 with a lease of $5 seconds: the best $3 of all of them in claim
-- order (priority DESC, created_at, id), as if they were one queue. The
-- single-queue claim (job-claim.sql) is left as it is; this statement is
-- the multi-queue claim's (job-claim-queues.ts, docs/jobs-api.md "Claiming
-- from several queues").
--
-- Two reads of jobs_claim_idx per queue, in one statement:
-- 1. `heads`: each queue's first candidates in index order, without locks
--    (at most its room, never more than $3), merged; the best $3 of the
--    merge say how many of the batch each queue gives (`shares`). Only the
--    queues that may give more than an even part are read that far
--    (`first`, `cut`, `saturated`, `more`).
-- 2. `picked`: each uncapped queue's share, read again in index order
--    FOR UPDATE SKIP LOCKED, like job-claim.sql: concurrent claimers pass
--    each other, and a row another claim took meanwhile is skipped (the
--    locked read rechecks it), so no job is on two leases. Locking in the
--    first read instead would lock up to $3 rows per queue (a LOCK record
--    each) to claim $3 in all.
--
-- Capped queues (queue_config.capped: concurrency_limit, rate_limit,
-- concurrency keys, fair share) are not claimed here: they need their
-- config row locked (job-claim-capped.sql) for their limits to hold
-- against every other claimer. Their shares come back as rows of their
-- own (below), and the caller claims each through the capped claim of
-- job-claim.ts. Their `room` here is only an estimate that keeps a capped
-- queue from taking a share it cannot use: the free places under its
-- concurrency_limit and the whole tokens its bucket holds now (read
-- without the lock; the capped claim counts again under it). A paused
-- queue has no room.
WITH queues AS MATERIALIZED (
  SELECT r.name, r.enabled, r.capped, r.rate, r.tokens, r.burst,
         CASE WHEN NOT r.enabled THEN 0
              WHEN NOT r.capped THEN $3::int
              ELSE greatest(0, least($3::int,
                CASE WHEN r.concurrency_limit IS NOT NULL THEN r.concurrency_limit - (
                  SELECT count(*) FROM spool.jobs p
                  WHERE p.organization_id = $1 AND p.queue_name = r.name AND p.status = 'processing'
                )::int ELSE $3::int END,
                coalesce(floor(r.tokens)::int, $3::int)))
         END AS room
  FROM (
    SELECT q.name,
           coalesce(qc.enabled, true) AS enabled,
           coalesce(qc.capped, false) AS capped,
           qc.concurrency_limit,
           qc.rate_limit AS rate,
           spool.rate_burst(qc.rate_limit, qc.rate_limit_burst) AS burst,
           CASE WHEN qc.rate_limit IS NOT NULL THEN spool.rate_tokens_at(qc.rate_tokens, qc.rate_refilled_at, qc.rate_limit,
             spool.rate_burst(qc.rate_limit, qc.rate_limit_burst), now()) END AS tokens
    FROM unnest($2::text[]) q(name)
    LEFT JOIN spool.queue_config qc ON qc.organization_id = $1 AND qc.queue_name = q.name
  ) r
),
-- Each queue's first k candidates, k about its even part of the batch
-- (plus one), so that a claim of n across Q full queues reads some n + Q
-- entries, not n per queue.
step AS MATERIALIZED (
  SELECT least($3::int, ceil($3::numeric / greatest(1, count(*) FILTER (WHERE room > 0)))::int + 1) AS k FROM queues
),
first AS MATERIALIZED (
  SELECT h.queue_name, h.priority, h.created_at, h.id
  FROM queues q
  CROSS JOIN LATERAL (
    SELECT c.queue_name, c.priority, c.created_at, c.id FROM spool.claimable_jobs c
    WHERE c.organization_id = $1 AND c.queue_name = q.name
    ORDER BY c.priority DESC, c.created_at ASC, c.id ASC
    LIMIT least(q.room, (SELECT k FROM step))
  ) h
),
top AS MATERIALIZED (
  SELECT * FROM first ORDER BY priority DESC, created_at ASC, id ASC LIMIT $3::int
),
-- With a full `top`, its last row is the cut: the batch's last job is at
-- or above it (n candidates are), so nothing below it is needed.
cut AS MATERIALIZED (
  SELECT priority, created_at, id FROM top
  WHERE (SELECT count(*) FROM top) = $3::int
  ORDER BY priority ASC, created_at DESC, id DESC LIMIT 1
),
-- Queues with more room than k whose k candidates all made `top` may have
-- more above the cut: those are read again from their start, up to the
-- cut (two index ranges, as job-claim.sql's floor), or, without a cut, up
-- to n. Every other queue has given all it can to `top`.
saturated AS MATERIALIZED (
  SELECT q.name, least(q.room, $3::int) AS room
  FROM queues q
  WHERE q.room > (SELECT k FROM step)
    AND (SELECT count(*) FROM top t WHERE t.queue_name = q.name) = (SELECT k FROM step)
),
more AS MATERIALIZED (
  SELECT m.queue_name, m.priority, m.created_at, m.id
  FROM saturated s
  CROSS JOIN LATERAL (
    SELECT * FROM (
      SELECT * FROM (
        SELECT c.queue_name, c.priority, c.created_at, c.id FROM spool.claimable_jobs c
        WHERE c.organization_id = $1 AND c.queue_name = s.name
          AND c.priority > (SELECT priority FROM cut)
        ORDER BY c.priority DESC, c.created_at ASC, c.id ASC
        LIMIT s.room
      ) above
      UNION ALL
      SELECT * FROM (
        SELECT c.queue_name, c.priority, c.created_at, c.id FROM spool.claimable_jobs c
        WHERE c.organization_id = $1 AND c.queue_name = s.name
          AND c.priority = (SELECT priority FROM cut)
          AND (c.created_at, c.id) <= (SELECT created_at, id FROM cut)
        ORDER BY c.priority DESC, c.created_at ASC, c.id ASC
        LIMIT s.room
      ) at_cut
      UNION ALL
      SELECT * FROM (
        SELECT c.queue_name, c.priority, c.created_at, c.id FROM spool.claimable_jobs c
        WHERE NOT EXISTS (SELECT 1 FROM cut) AND c.organization_id = $1 AND c.queue_name = s.name
        ORDER BY c.priority DESC, c.created_at ASC, c.id ASC
        LIMIT s.room
      ) uncut
    ) r
    LIMIT s.room
  ) m
),
heads AS MATERIALIZED (
  SELECT * FROM (
    SELECT * FROM top WHERE queue_name NOT IN (SELECT name FROM saturated)
    UNION ALL
    SELECT * FROM more
  ) h
  ORDER BY priority DESC, created_at ASC, id ASC
  LIMIT $3::int
),
shares AS MATERIALIZED (
  SELECT q.name, q.capped, count(*)::int AS n
  FROM heads h JOIN queues q ON q.name = h.queue_name
  GROUP BY q.name, q.capped
),
picked AS (
  SELECT l.tid
  FROM shares s
  CROSS JOIN LATERAL (
    SELECT c.tid FROM spool.claimable_jobs c
    WHERE c.organization_id = $1 AND c.queue_name = s.name
    ORDER BY c.priority DESC, c.created_at ASC, c.id ASC
    LIMIT s.n
    FOR UPDATE SKIP LOCKED
  ) l
  WHERE NOT s.capped
),
-- As job-claim.sql: the picked rows by tuple id (migration 044), which
-- this statement's locks keep current.
claimed AS (
  -- The live partition itself: a tuple id means something only within one.
  UPDATE spool.jobs_live j
  SET status = 'processing',
      assigned_worker_id = $4,
      lease_id = gen_random_uuid(),
      lease_expires_at = least(now() + make_interval(secs => $5), CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END),
      deadline_at = CASE WHEN j.timeout_enforced THEN now() + make_interval(secs => j.timeout_seconds) END,
      started_at = coalesce(j.started_at, now()),
      updated_at = now()
  WHERE j.ctid = ANY (ARRAY(SELECT tid FROM picked))
  RETURNING j.*
),
-- As job-claim.sql: first claims in one row per queue (migration 021: one
-- queue, one worker), re-runs in a row each.
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, worker_id, lease_id, job_ids, lease_ids)
  SELECT organization_id, NULL, queue_name, 'claim', 'pending', 'processing', $4, NULL, array_agg(id), array_agg(lease_id)
  FROM claimed WHERE started_at = now()
  GROUP BY organization_id, queue_name
  UNION ALL
  SELECT organization_id, id, queue_name, 'claim', 'pending', 'processing', assigned_worker_id, lease_id, NULL, NULL
  FROM claimed WHERE started_at < now()
)
-- The claimed jobs in claim order, then one row per queue with a share (share_queue set,
-- every job column NULL): the caller claims capped queues' shares and
-- tells which uncapped queue gave less than its share. A rate-limited
-- queue with due jobs but no whole token gets a row too, with retry_ms:
-- when its bucket holds a batch's worth of tokens again (as
-- job-claim.ts's refillMs), for a long poll to sleep on.
(SELECT c.*, NULL::text AS share_queue, NULL::int AS share, NULL::boolean AS share_capped, NULL::int AS retry_ms
 FROM claimed c
 ORDER BY c.priority DESC, c.created_at ASC, c.id ASC)
UNION ALL
SELECT (NULL::spool.jobs).*, s.name, s.n, s.capped, NULL::int
FROM shares s
UNION ALL
SELECT (NULL::spool.jobs).*, q.name, 0, true,
       greatest(1, ceil((least($3::int, q.burst) - q.tokens) / q.rate * 1000))::int
FROM queues q
WHERE q.enabled AND q.rate IS NOT NULL AND q.room = 0 AND q.tokens < 1
  AND EXISTS (SELECT 1 FROM spool.claimable_jobs c WHERE c.organization_id = $1 AND c.queue_name = q.name);
