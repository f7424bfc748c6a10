-- The progress a job's worker last reported (job_progress_pkey), if any.
SELECT job_id, percent, message, metadata, updated_at
FROM spool.job_progress
WHERE organization_id = $1 AND job_id = $2;
