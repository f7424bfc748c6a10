-- Per-queue gauges for /metrics, across all organizations (the metrics
-- endpoint is an operator's view, not a tenant's). Each arm repeats one
-- partial index's predicate exactly, so the planner reads only that index
-- (plus the heap rows it points at) and the cost grows with the number of
-- unfinished jobs, never with finished rows (docs/metrics.md):
--   pending    -> jobs_claim_idx        (waiting_since needs the heap row's scheduled_at)
--   scheduled  -> jobs_scheduled_idx
--   processing -> jobs_lease_expiry_idx
--   deadletter -> dead_letter_queue_org_idx (index-only)
-- oldest: for pending, when the oldest due job became runnable (a retry is
-- runnable from its backoff time, not from its creation); for scheduled, the
-- next due time; for processing, the earliest lease expiry.
SELECT organization_id, queue_name, 'pending' AS status, count(*)::bigint AS count,
       min(greatest(created_at, coalesce(scheduled_at, created_at)))
         FILTER (WHERE scheduled_at IS NULL OR scheduled_at <= now()) AS oldest
FROM spool.jobs
WHERE status = 'pending' AND dependencies_met IS NOT FALSE
GROUP BY organization_id, queue_name
UNION ALL
SELECT organization_id, queue_name, 'scheduled', count(*)::bigint, min(scheduled_at)
FROM spool.jobs
WHERE status = 'scheduled'
GROUP BY organization_id, queue_name
UNION ALL
SELECT organization_id, queue_name, 'processing', count(*)::bigint, min(lease_expires_at)
FROM spool.jobs
WHERE status = 'processing'
GROUP BY organization_id, queue_name
UNION ALL
SELECT organization_id, queue_name, 'deadletter', count(*)::bigint, NULL::timestamptz
FROM spool.dead_letter_queue
GROUP BY organization_id, queue_name;
