-- A capped claim (job-claim.sql, $6) locks its queue's config row and
-- claims in one statement. That statement's snapshot was taken before it
-- waited for the lock, so it cannot see the jobs the previous holder of the
-- lock started; these functions count the processing jobs in a snapshot of
-- their own, taken when they run, which is after the lock is held.
-- PL/pgSQL and VOLATILE on purpose: each query in a volatile function takes
-- a fresh snapshot (READ COMMITTED), and PL/pgSQL is never inlined into the
-- caller's query, whose snapshot it would then share.

-- The queue's processing jobs (its concurrency_limit).
CREATE FUNCTION spool.queue_processing_now(org uuid, queue text) RETURNS integer
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n integer;
BEGIN
  SELECT count(*)::integer INTO n FROM spool.jobs
  WHERE organization_id = org AND queue_name = queue AND status = 'processing';
  RETURN n;
END
$$;

-- The queue's processing jobs per concurrency_key (its concurrency_key_limit),
-- from jobs_concurrency_key_idx.
CREATE FUNCTION spool.queue_processing_keys_now(org uuid, queue text) RETURNS TABLE (concurrency_key text, n integer)
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN QUERY
  SELECT j.concurrency_key, count(*)::integer FROM spool.jobs j
  WHERE j.organization_id = org AND j.queue_name = queue AND j.status = 'processing' AND j.concurrency_key IS NOT NULL
  GROUP BY j.concurrency_key;
END
$$;
