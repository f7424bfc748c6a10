-- What keeps an organization from being deleted (see organization-delete.sql).
SELECT
  (SELECT count(*) FROM spool.jobs j WHERE j.organization_id = $1 AND j.status IN ('pending', 'scheduled') AND j.status <> 'processing')
    + (SELECT count(*) FROM spool.jobs j WHERE j.organization_id = $1 AND j.status = 'processing') AS active_jobs,
  (SELECT count(*) FROM spool.workers w WHERE w.organization_id = $1 AND w.status <> 'offline') AS live_workers,
  (SELECT count(*) FROM spool.schedules s WHERE s.organization_id = $1 AND s.is_active) AS active_schedules;
