-- Of jobs $2 of organization $1, those whose queue matches none of the
-- caller's queue patterns $3 (LIKE): what a queue-scoped key may not touch
-- (server authorization.ts). One primary-key probe per id.
SELECT id
FROM spool.jobs
WHERE organization_id = $1
  AND id = ANY ($2::uuid[])
  AND NOT (queue_name LIKE ANY ($3::text[]));
