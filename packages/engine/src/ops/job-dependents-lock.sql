-- Locks the still-blocked dependents of the given jobs, in id order, before a
-- recount (ops/job-dependencies-recount.sql) in a later statement of the same
-- transaction: the recount's fresh snapshot then sees every completion that
-- got to these rows first, and later ones wait for it.
SELECT j.id
FROM spool.job_dependencies d
JOIN spool.jobs j ON j.id = d.job_id
WHERE d.organization_id = $1
  AND d.depends_on_job_id = ANY($2::uuid[])
  AND j.organization_id = $1
  AND j.status IN ('pending', 'scheduled')
  AND j.dependencies_met = false
ORDER BY j.id
FOR UPDATE OF j;
