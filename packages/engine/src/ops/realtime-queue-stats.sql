-- Counts for the realtime QueueStats event (docs/compatibility.md §4.2): pending
-- includes scheduled, failed includes deadletter. pending and processing
-- read the queue's unfinished jobs; completed and failed are the last 24
-- hours of its activity history (migration 023: jobs completed, and jobs
-- that failed for good), so the cost does not follow the jobs kept.
SELECT (SELECT count(*)::int
        FROM spool.jobs
        WHERE organization_id = $1 AND queue_name = $2 AND status IN ('pending', 'scheduled') AND status <> 'processing') AS pending,
       (SELECT count(*)::int
        FROM spool.jobs
        WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing') AS processing,
       coalesce(sum(completed), 0)::int AS completed,
       coalesce(sum(deadlettered), 0)::int AS failed
FROM spool.queue_activity(now() - interval '24 hours')
WHERE organization_id = $1 AND queue_name = $2;
