-- Deletes an organization and, by cascade, everything it owns except jobs
-- and their history (no foreign keys: migration 013), which
-- organization-delete-jobs.sql removes in the next statement of the same
-- transaction. Unless forced ($2), nothing is deleted while the organization
-- still has active jobs, live workers or active schedules.
DELETE FROM spool.organizations o
WHERE o.id = $1
  AND ($2::boolean OR (
        NOT EXISTS (SELECT 1 FROM spool.jobs j WHERE j.organization_id = $1 AND j.status IN ('pending', 'scheduled') AND j.status <> 'processing')
    AND NOT EXISTS (SELECT 1 FROM spool.jobs j WHERE j.organization_id = $1 AND j.status = 'processing')
    AND NOT EXISTS (SELECT 1 FROM spool.workers w WHERE w.organization_id = $1 AND w.status <> 'offline')
    AND NOT EXISTS (SELECT 1 FROM spool.schedules s WHERE s.organization_id = $1 AND s.is_active)))
RETURNING o.id;
