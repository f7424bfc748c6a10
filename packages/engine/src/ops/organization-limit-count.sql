-- How many of a limited resource ($2) an organization holds, counted up to
-- $3 (a plan check only needs to know whether the limit is reached). The
-- same definitions as organization-usage.sql, except workers: live workers
-- are counted by identity (hostname, queue), leaving out the identity $4/$5
-- being registered, so a worker that restarts and registers again before
-- its old entry goes offline is not a second worker.
SELECT CASE $2::text
  WHEN 'workers' THEN (SELECT count(*) FROM (
    SELECT DISTINCT w.hostname, w.queue_name FROM spool.workers w
    WHERE w.organization_id = $1 AND w.status IN ('healthy', 'degraded')
      AND (w.hostname, w.queue_name) IS DISTINCT FROM ($4::text, $5::text)
    LIMIT $3) AS c)
  WHEN 'api_keys' THEN (SELECT count(*) FROM (
    SELECT 1 FROM spool.api_keys k WHERE k.organization_id = $1 AND k.is_active LIMIT $3) AS c)
  WHEN 'schedules' THEN (SELECT count(*) FROM (
    SELECT 1 FROM spool.schedules s WHERE s.organization_id = $1 AND s.is_active LIMIT $3) AS c)
  WHEN 'workflows' THEN (SELECT count(*) FROM (
    SELECT 1 FROM spool.workflows f WHERE f.organization_id = $1 AND f.status IN ('pending', 'running') LIMIT $3) AS c)
  WHEN 'webhooks' THEN (SELECT count(*) FROM (
    SELECT 1 FROM spool.outgoing_webhooks h WHERE h.organization_id = $1 AND h.enabled LIMIT $3) AS c)
END AS current;
