-- The newest job_history position (a backward primary-key probe).
SELECT coalesce(max(id), 0)::bigint AS head FROM spool.job_history;
