-- Appends lines $5 (in order) to the log of a job for the worker that holds
-- it, fenced like job-heartbeat.sql (spool.job_fence, migration 042). The log keeps the newest $6 lines within
-- $7 bytes: in the same statement older lines past the bound are deleted,
-- and new ones that would not fit (the oldest of a large batch) are never
-- written. The bound is applied by each append from its snapshot: two
-- appends racing on one job may leave it over by one batch until the next.
-- A job.log event with the lines written goes to the event log (one NOTIFY
-- on spool_events). Returns no row when the caller lost the job.
WITH owner AS (
  SELECT j.organization_id, j.id, j.queue_name
  FROM spool.jobs j
  WHERE j.organization_id = $1
    AND j.phase = 'live' -- a finished job holds no lease; the planner prunes jobs_done
    AND j.id = $2
    AND spool.job_fence(j, $3::text, $4::uuid) = 'held'
),
candidates AS (
  -- newest first: the new lines from the last, then the stored ones (job_logs_pkey backwards)
  SELECT 0 AS src, l.ord AS ord, NULL::bigint AS seq, l.line
  FROM owner o CROSS JOIN unnest($5::text[]) WITH ORDINALITY AS l(line, ord)
  UNION ALL
  SELECT 1, NULL, g.seq, g.line
  FROM owner o JOIN spool.job_logs g ON g.organization_id = o.organization_id AND g.job_id = o.id
),
ranked AS (
  SELECT c.src, c.ord, c.seq, c.line,
         row_number() OVER w AS n,
         sum(octet_length(c.line)) OVER w AS bytes
  FROM candidates c
  WINDOW w AS (ORDER BY c.src, c.ord DESC, c.seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
trimmed AS (
  DELETE FROM spool.job_logs g
  USING ranked r, owner o
  WHERE r.src = 1 AND (r.n > $6 OR r.bytes > $7)
    AND g.organization_id = o.organization_id AND g.job_id = o.id AND g.seq = r.seq
  RETURNING g.seq
),
written AS (
  INSERT INTO spool.job_logs (organization_id, job_id, line)
  SELECT o.organization_id, o.id, r.line
  FROM ranked r CROSS JOIN owner o
  WHERE r.src = 0 AND r.n <= $6 AND r.bytes <= $7
  ORDER BY r.ord
  RETURNING seq, line
),
event AS (
  INSERT INTO spool.events (organization_id, type, data)
  SELECT o.organization_id, 'job.log', jsonb_build_object(
    'job_id', o.id, 'queue_name', o.queue_name,
    'lines', (SELECT jsonb_agg(w.line ORDER BY w.seq) FROM written w),
    'last_seq', (SELECT max(w.seq) FROM written w))
  FROM owner o
  WHERE EXISTS (SELECT 1 FROM written)
  RETURNING 1
),
notified AS (
  SELECT pg_notify('spool_events', '') WHERE EXISTS (SELECT 1 FROM event)
)
SELECT o.id AS job_id,
       (SELECT count(*) FROM written)::int AS written,
       (SELECT count(*) FROM trimmed)::int AS dropped,
       (SELECT max(seq) FROM written) AS last_seq
FROM owner o LEFT JOIN notified ON true;
