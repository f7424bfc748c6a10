-- Counts for the realtime QueueStats event (docs/compatibility.md §4.2): pending
-- includes scheduled, failed includes deadletter. Finished jobs are counted
-- over the last 24 hours (by creation) so that the cost stays bounded.
SELECT count(*) FILTER (WHERE status IN ('pending', 'scheduled'))::int AS pending,
       count(*) FILTER (WHERE status = 'processing')::int AS processing,
       count(*) FILTER (WHERE status = 'completed' AND created_at > now() - interval '24 hours')::int AS completed,
       count(*) FILTER (WHERE status IN ('failed', 'deadletter') AND created_at > now() - interval '24 hours')::int AS failed
FROM spool.jobs
WHERE organization_id = $1 AND queue_name = $2;
