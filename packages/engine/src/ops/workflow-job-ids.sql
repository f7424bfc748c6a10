-- Ids of a workflow's jobs that are in one of the statuses $3.
SELECT id FROM spool.jobs WHERE organization_id = $1 AND workflow_id = $2 AND status = ANY($3::text[]) ORDER BY id;
