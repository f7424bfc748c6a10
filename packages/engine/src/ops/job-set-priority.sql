-- Changes the priority of a job that has not started yet.
WITH target AS (
  SELECT id, priority AS old_priority
  FROM spool.jobs
  WHERE organization_id = $1 AND id = $2 AND status IN ('pending', 'scheduled')
  FOR UPDATE
)
UPDATE spool.jobs j
SET priority = $3, updated_at = now()
FROM target t
WHERE j.id = t.id
RETURNING j.id, t.old_priority, j.priority AS new_priority;
