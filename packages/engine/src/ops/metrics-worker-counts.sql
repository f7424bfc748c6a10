-- Registered workers by status (the workers table is small: one row per worker process).
SELECT status, count(*)::bigint AS count FROM spool.workers GROUP BY status;
