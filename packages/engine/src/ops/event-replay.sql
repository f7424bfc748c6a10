-- One organization's events for a resuming realtime client: ids in ($2, $3]
-- plus the ids $4 it had not received, optionally only those naming queue
-- $5, oldest first, at most $6 rows (events_org_id_idx).
SELECT e.id, e.organization_id, e.type, e.data, e.created_at
FROM spool.events e
WHERE e.organization_id = $1
  AND ((e.id > $2 AND e.id <= $3) OR e.id = ANY($4::bigint[]))
  AND ($5::text IS NULL OR e.data->>'queue_name' = $5::text)
ORDER BY e.id
LIMIT $6;
