-- The queue and trace context of jobs by id, for the server's spans of
-- operations whose own statement does not return them (complete, fail,
-- webhook delivery). Run only while the server exports traces.
SELECT id, queue_name, traceparent, tracestate
FROM spool.jobs
WHERE organization_id = $1 AND id = ANY ($2::uuid[]);
