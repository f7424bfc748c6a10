-- Partitions of spool.jobs_done made ahead (migration 047).
SELECT spool.jobs_done_partitions_premake() AS made;
