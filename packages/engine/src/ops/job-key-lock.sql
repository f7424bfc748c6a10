-- Takes the transaction lock of each (organization, queue, job_key) of a
-- batch, always in the same order so that two batches sharing keys cannot
-- deadlock. Enqueues of one key then take turns (job-key-resolve.sql reads
-- with a snapshot taken after the lock). A transaction lock, not a session
-- one: it works through PgBouncer's transaction pooling, and a crash frees it.
SELECT pg_advisory_xact_lock(k)
FROM (SELECT DISTINCT hashtextextended('spool.job_key:' || o::text || ':' || q || ':' || key, 0) AS k
      FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(o, q, key)
      ORDER BY k) s;
