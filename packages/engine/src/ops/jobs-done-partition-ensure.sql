-- Makes the partition of spool.jobs_done for one purge day, moving that
-- day's rows out of the default partition (migration 047).
SELECT spool.jobs_done_partition_ensure($1::date) AS made;
