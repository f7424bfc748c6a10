-- A job's status and its latest history id, read together: a realtime job
-- stream ignores history up to that id (already reflected in the status).
SELECT j.status, j.queue_name,
       (SELECT max(h.id) FROM spool.job_history h WHERE h.organization_id = j.organization_id AND h.job_id = j.id) AS last_history_id
FROM spool.jobs j
WHERE j.organization_id = $1 AND j.id = $2;
