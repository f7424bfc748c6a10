-- Per-queue gauges for /metrics, across all organizations (the metrics
-- endpoint is an operator's view, not a tenant's). The cost must not grow
-- with finished rows (a jobs table of 10,000,000 rows is normal), so:
--  1. queues: a loose index scan (one index probe per distinct queue) over
--     jobs_org_queue_status_idx, instead of a GROUP BY over the whole table,
--     plus the queues of processing jobs (jobs_processing_idx);
--  2. per queue and unfinished status, an index-only count over the same
--     index's (organization_id, queue_name, status) range, or over
--     jobs_processing_idx for processing: cost O(unfinished);
--  3. oldest runnable pending job: the first 100 pending rows in created_at
--     order (the same index read backwards) that are due; a retry is
--     runnable from its backoff time, not from its creation;
--  4. dead letters: index-only count over dead_letter_queue_org_idx.
-- Works the same on PostgreSQL 14-18 (no reliance on 18's skip scan).
WITH RECURSIVE listed AS (
  (SELECT organization_id, queue_name FROM spool.jobs WHERE status <> 'processing' ORDER BY organization_id, queue_name LIMIT 1)
  UNION ALL
  SELECT n.organization_id, n.queue_name
  FROM listed q
  CROSS JOIN LATERAL (
    SELECT j.organization_id, j.queue_name
    FROM spool.jobs j
    WHERE (j.organization_id, j.queue_name) > (q.organization_id, q.queue_name) AND j.status <> 'processing'
    ORDER BY j.organization_id, j.queue_name
    LIMIT 1
  ) n
),
-- Queues whose jobs are all processing are not in that index (migration
-- 043); their processing rows are few (bounded by the workers' concurrency).
queues AS (
  SELECT organization_id, queue_name FROM listed
  UNION
  SELECT DISTINCT organization_id, queue_name FROM spool.jobs WHERE status = 'processing'
)
SELECT q.organization_id, q.queue_name, s.status,
       CASE WHEN s.status = 'processing'
            THEN (SELECT count(*) FROM spool.jobs j
                  WHERE j.organization_id = q.organization_id AND j.queue_name = q.queue_name AND j.status = 'processing')
            ELSE (SELECT count(*) FROM spool.jobs j
                  WHERE j.organization_id = q.organization_id AND j.queue_name = q.queue_name AND j.status = s.status
                    AND j.status <> 'processing') -- the index's predicate, spelled out (s.status is not a constant)
       END::bigint AS count,
       CASE WHEN s.status = 'pending' THEN (
         SELECT min(greatest(o.created_at, coalesce(o.scheduled_at, o.created_at)))
         FROM (SELECT j.created_at, j.scheduled_at FROM spool.jobs j
               WHERE j.organization_id = q.organization_id AND j.queue_name = q.queue_name AND j.status = 'pending'
                 AND (j.scheduled_at IS NULL OR j.scheduled_at <= now())
               ORDER BY j.created_at
               LIMIT 100) o)
       END AS oldest
FROM queues q
CROSS JOIN (VALUES ('pending'), ('scheduled'), ('processing')) AS s(status)
UNION ALL
SELECT organization_id, queue_name, 'deadletter', count(*)::bigint, NULL::timestamptz
FROM spool.dead_letter_queue
GROUP BY organization_id, queue_name;
