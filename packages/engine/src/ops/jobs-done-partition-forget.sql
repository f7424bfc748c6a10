-- The oldest partition of spool.jobs_done whose purge day is over (before
-- today in UTC): what belongs to its jobs in other tables goes (migration
-- 047). The caller then drops it in a transaction of its own.
SELECT partition_name, jobs, history FROM spool.jobs_done_partition_forget((now() AT TIME ZONE 'UTC')::date);
