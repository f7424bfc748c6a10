-- Jobs whose time has come become claimable, and their queues' claimers are
-- woken with one NOTIFY: scheduled jobs become pending (a transition, with a
-- history row), and retries whose backoff ended leave the backoff state
-- (they were pending all along, so no history row).
WITH due AS (
  SELECT id
  FROM spool.jobs
  WHERE phase = 'live' AND status = 'scheduled' AND scheduled_at <= now()
  ORDER BY scheduled_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
retry_due AS (
  SELECT id
  FROM spool.jobs
  WHERE phase = 'live' AND in_backoff AND scheduled_at <= now()
  ORDER BY scheduled_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
promoted AS (
  UPDATE spool.jobs j
  SET status = 'pending', updated_at = now()
  WHERE j.id = ANY (ARRAY(SELECT id FROM due)) AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name
),
retried AS (
  UPDATE spool.jobs j
  SET in_backoff = false, updated_at = now()
  WHERE j.id = ANY (ARRAY(SELECT id FROM retry_due)) AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status)
  SELECT organization_id, id, queue_name, 'promote', 'scheduled', 'pending' FROM promoted
),
woken AS (
  SELECT organization_id, queue_name FROM promoted
  UNION ALL
  SELECT organization_id, queue_name FROM retried
)
SELECT greatest((SELECT count(*) FROM promoted), (SELECT count(*) FROM retried))::int AS promoted,
       (SELECT pg_notify('spool_jobs', json_build_object('q', array_agg(DISTINCT organization_id::text || ':' || queue_name))::text)
          FROM woken HAVING count(*) > 0) IS NOT NULL AS notified;
