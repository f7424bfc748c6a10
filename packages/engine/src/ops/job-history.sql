-- The recorded transitions of one job, oldest first (the dashboard's
-- timeline): spool.job_timeline (migration 021) reads the job's own rows
-- through job_history_job_idx and its routine events through
-- job_history_batch_idx. actor and details: migration 031.
SELECT id, event, from_status, to_status, worker_id, lease_id, message, created_at, actor, details
FROM spool.job_timeline($1, $2)
LIMIT $3;
