-- Days of finished jobs caught by the default partition of spool.jobs_done
-- (no partition for their day when they finished, migration 047), read in a
-- statement of its own so that the partitions are then made with no lock on
-- the default partition held.
SELECT DISTINCT purge_on::text AS day FROM spool.jobs_done_default ORDER BY 1;
