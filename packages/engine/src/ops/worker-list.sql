-- Workers of an organization, most recent heartbeat first; with $3 (the
-- caller's queues as LIKE patterns) only those serving any of them.
SELECT * FROM spool.workers
WHERE organization_id = $1
  AND ($3::text[] IS NULL OR EXISTS (
    SELECT 1 FROM unnest(array_append(queue_names, queue_name)) AS q(name) WHERE q.name LIKE ANY ($3::text[])))
ORDER BY last_heartbeat DESC, id LIMIT $2;
