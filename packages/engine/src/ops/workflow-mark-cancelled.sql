-- Ends a workflow as cancelled (after its unfinished jobs were cancelled in
-- the same transaction). A completed workflow stays completed.
UPDATE spool.workflows
SET status = 'cancelled', completed_at = coalesce(completed_at, now()), updated_at = now()
WHERE organization_id = $1 AND id = $2 AND status <> 'completed'
RETURNING id;
