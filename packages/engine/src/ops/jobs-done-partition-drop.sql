-- Drops a day's partition of spool.jobs_done (migration 047).
SELECT spool.jobs_done_partition_drop($1) AS dropped;
