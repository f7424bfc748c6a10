-- Rows of routine transitions (migration 021: job_id null) older than $1
-- days go, oldest first, at most $2 per statement
-- (job_history_batch_created_idx). They hold many jobs' events, so they
-- cannot go with each job as its own rows do; the window is the longest a
-- finished job is kept, after which a job's timeline tells its creation
-- from its own columns (spool.job_timeline).
DELETE FROM spool.job_history
WHERE id IN (
  SELECT id FROM spool.job_history
  WHERE job_id IS NULL AND created_at < now() - make_interval(secs => 86400 * $1::float8)
  ORDER BY created_at
  LIMIT $2
)
RETURNING id;
