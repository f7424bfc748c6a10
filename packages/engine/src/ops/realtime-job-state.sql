-- A job's status and the event id of its latest history event, read
-- together: a realtime job stream ignores history up to that id (already
-- reflected in the status).
SELECT j.status, j.queue_name,
       (SELECT max(t.id) FROM spool.job_timeline(j.organization_id, j.id) t) AS last_history_id
FROM spool.jobs j
WHERE j.organization_id = $1 AND j.id = $2;
