-- Why a job is not running: every fact GET /jobs/{id}/explain needs, in one
-- statement, so they all come from one snapshot and one now() (a job that
-- changes between two reads would be explained by facts that never held
-- together). job-explain.ts turns the facts into reasons.
--
-- Read-only on purpose: nothing is locked, and the token bucket is refilled
-- here only in arithmetic, as the capped claim (job-claim-capped.sql) would refill it, never
-- written back (writing it would move rate_refilled_at and so change what the
-- next claim gets). It can therefore disagree by a token with a claim running
-- at the same moment.
--
-- `claimable` asks spool.claimable_jobs, the claim's own predicate
-- (migrations 015, 028), and `ahead` counts the same view in the claim's
-- order, so neither can drift from what a claim takes. The counts that cost
-- a scan are guarded by a CASE, and a subplan in a branch not taken is never
-- run: a queue without a concurrency_limit counts nothing, and `ahead` is
-- counted only for a claimable job, up to $3 rows.
--
-- Liveness of workers follows the worker-liveness service: a worker that is
-- not offline and heartbeated within its silence window ($4 ms).
WITH job AS (
  SELECT j.id, j.queue_name, j.status, j.priority, j.created_at, j.scheduled_at, j.expires_at,
         j.in_backoff, j.retry_count, j.max_retries, j.last_error, j.completed_at,
         j.dependencies_met, j.dependency_mode, j.concurrency_key, j.fairness_key,
         j.assigned_worker_id, j.lease_expires_at, j.cancel_requested_at, j.job_key, j.job_key_mode
  FROM spool.jobs j
  WHERE j.organization_id = $1 AND j.id = $2
),
facts AS (
  SELECT job.*,
         EXISTS (SELECT 1 FROM spool.claimable_jobs c WHERE c.organization_id = $1 AND c.id = job.id) AS claimable,
         -- The job's own latest history event (job_history_job_idx): a wait
         -- after a snooze looks like a retry's backoff in the job row.
         (SELECT h.event FROM spool.job_history h WHERE h.organization_id = $1 AND h.job_id = job.id ORDER BY h.id DESC LIMIT 1) AS last_event,
         q.id IS NOT NULL AS configured,
         coalesce(q.enabled, true) AS enabled, q.paused_at, q.pause_reason,
         q.rate_limit,
         spool.rate_burst(q.rate_limit, q.rate_limit_burst) AS rate_burst,
         q.rate_tokens, q.rate_refilled_at,
         q.concurrency_limit, q.concurrency_key_limit,
         q.fairness, coalesce(q.fairness_weights, '{}'::jsonb) AS fairness_weights, coalesce(q.fair_cursor, '') AS fair_cursor
  FROM job
  LEFT JOIN spool.queue_config q ON q.organization_id = $1 AND q.queue_name = job.queue_name
),
-- A claimable keyed job of a fair queue: its key's claimable jobs of its
-- priority before it, and so the turn it goes in (its key takes `weight`
-- jobs a turn, docs/jobs-api.md "Explain").
fair_place AS (
  SELECT f.id, t.before, t.before / w.weight + 1 AS turn, w.weight
  FROM facts f
  CROSS JOIN LATERAL (SELECT coalesce((f.fairness_weights ->> f.fairness_key)::int, 1) AS weight) w
  CROSS JOIN LATERAL (
    SELECT count(*)::int AS before FROM (
      SELECT 1 FROM spool.claimable_jobs c
      WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.fairness_key = f.fairness_key
        AND c.priority = f.priority AND (c.created_at, c.id) < (f.created_at, f.id)
      ORDER BY c.priority DESC, c.fairness_key, c.created_at, c.id
      LIMIT $3
    ) x
  ) t
  WHERE f.claimable AND f.fairness IS NOT NULL AND f.fairness_key IS NOT NULL
)
SELECT f.*,
       now() AS checked_at,
       -- The bucket as the next claim would refill it, at this statement's time.
       CASE WHEN f.rate_limit IS NOT NULL THEN spool.rate_tokens_at(f.rate_tokens, f.rate_refilled_at, f.rate_limit, f.rate_burst, now()) END AS rate_available,
       CASE WHEN f.concurrency_limit IS NOT NULL THEN (
         SELECT count(*)::int FROM spool.jobs p
         WHERE p.organization_id = $1 AND p.queue_name = f.queue_name AND p.status = 'processing'
       ) END AS processing_count,
       CASE WHEN f.concurrency_key_limit IS NOT NULL AND f.concurrency_key IS NOT NULL THEN (
         SELECT count(*)::int FROM spool.jobs p
         WHERE p.organization_id = $1 AND p.queue_name = f.queue_name AND p.status = 'processing'
           AND p.concurrency_key = f.concurrency_key
       ) END AS key_running,
       -- Dependencies that have not completed (a deleted one has a null status
       -- and never completes), the first 100 by when they were added. A
       -- continue edge to a job that ended without success is satisfied
       -- (migration 035), so it holds nothing.
       CASE WHEN f.dependencies_met IS FALSE THEN (
         SELECT json_build_object(
                  'count', count(*),
                  'items', coalesce(json_agg(json_build_object('job_id', d.job_id, 'status', d.status, 'queue_name', d.queue_name)
                                             ORDER BY d.created_at, d.job_id) FILTER (WHERE d.nth <= 100), '[]'::json))
         FROM (
           SELECT e.depends_on_job_id AS job_id, p.status, p.queue_name, e.created_at,
                  row_number() OVER (ORDER BY e.created_at, e.depends_on_job_id) AS nth
           FROM spool.job_dependencies e
           LEFT JOIN spool.jobs p ON p.organization_id = e.organization_id AND p.id = e.depends_on_job_id
           WHERE e.organization_id = $1 AND e.job_id = f.id AND p.status IS DISTINCT FROM 'completed'
             AND NOT (e.on_parent_failure = 'continue' AND coalesce(p.status IN ('failed', 'deadletter', 'cancelled'), false))
         ) d
       ) END AS dependencies,
       (SELECT count(*)::int FROM spool.workers w
         WHERE w.organization_id = $1 AND w.last_heartbeat > now() - make_interval(secs => $4::float8 / 1000)
           AND w.status <> 'offline'
           AND (w.queue_name = f.queue_name OR f.queue_name = ANY (w.queue_names))) AS live_workers,
       -- Two ranges of jobs_claim_idx, higher priorities and the job's own
       -- priority before it, each an index range that stops at the job: one
       -- OR over both would be a filter, read to the end of the queue. The
       -- ORDER BY is the index's, so the LIMIT is read from it (without it
       -- the planner, not knowing the priority, took a sequential scan).
       -- A fair queue orders its own priority by turns instead (below).
       CASE WHEN f.claimable THEN least($3::int, (
         SELECT count(*)::int FROM (
           SELECT 1 FROM spool.claimable_jobs c
           WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority > f.priority
           ORDER BY c.priority DESC, c.created_at, c.id
           LIMIT $3
         ) higher
       ) + CASE
         WHEN f.fairness IS NULL THEN (
           SELECT count(*)::int FROM (
             SELECT 1 FROM spool.claimable_jobs c
             WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority
               AND (c.created_at, c.id) < (f.created_at, f.id)
             ORDER BY c.priority DESC, c.created_at, c.id
             LIMIT $3
           ) same)
         -- Without a key in a fair queue: after every keyed job of its
         -- priority, then in claim order among the others.
         WHEN f.fairness_key IS NULL THEN (
           SELECT count(*)::int FROM (
             SELECT 1 FROM spool.claimable_jobs c
             WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority AND c.fairness_key IS NOT NULL
             ORDER BY c.priority DESC, c.fairness_key, c.created_at, c.id
             LIMIT $3
           ) keyed) + (
           SELECT count(*)::int FROM (
             SELECT 1 FROM spool.claimable_jobs c
             WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority
               AND c.fairness_key IS NULL AND (c.created_at, c.id) < (f.created_at, f.id)
             ORDER BY c.priority DESC, c.created_at, c.id
             LIMIT $3
           ) unkeyed)
         -- With a key: its key's jobs before it, and from every other key of
         -- its priority as many as that key gets in the turns before the
         -- job's, plus one more turn for the keys served before the job's
         -- key in a turn (after fair_cursor in key order, then wrapping).
         -- A walk over the keys, an index probe each, stopped at $3 jobs.
         ELSE fp.before + (
           WITH RECURSIVE walk (key, total, steps) AS (
             SELECT (SELECT c.fairness_key FROM spool.claimable_jobs c
                     WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority AND c.fairness_key IS NOT NULL
                     ORDER BY c.priority DESC, c.fairness_key LIMIT 1), 0, 0
             UNION ALL
             SELECT (SELECT c.fairness_key FROM spool.claimable_jobs c
                     WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority AND c.fairness_key > w.key
                     ORDER BY c.priority DESC, c.fairness_key LIMIT 1),
                    w.total + CASE WHEN w.key = f.fairness_key THEN 0 ELSE (
                      SELECT count(*)::int FROM (
                        SELECT 1 FROM spool.claimable_jobs c
                        WHERE c.organization_id = $1 AND c.queue_name = f.queue_name AND c.priority = f.priority AND c.fairness_key = w.key
                        ORDER BY c.priority DESC, c.fairness_key, c.created_at, c.id
                        LIMIT coalesce((f.fairness_weights ->> w.key)::int, 1)
                              * (fp.turn - 1 + CASE WHEN (w.key > f.fair_cursor, f.fairness_key) > (f.fairness_key > f.fair_cursor, w.key) THEN 1 ELSE 0 END)
                      ) x) END,
                    w.steps + 1
             FROM walk w
             WHERE w.key IS NOT NULL AND w.total < $3 AND w.steps < $3
           )
           SELECT max(total) FROM walk)
         END) END AS ahead
FROM facts f
LEFT JOIN fair_place fp ON fp.id = f.id;
