-- Explains fenced operations that changed nothing: claims ($2 jobs, $3
-- workers, $4 presented leases or NULL) judged by spool.job_fence (migration
-- 042), plus what the job's row cannot tell: a missing job, and a presented
-- lease of an attempt the reaper already ended as timed out (migration 026;
-- its `timeout` rows name the leases it ended; read only for a refusal,
-- through job_history_job_idx). `held` here is a claim that the statement
-- refused and that holds the job by now (see fence.ts).
SELECT c.id,
       CASE WHEN j.id IS NULL THEN 'not_found'
            WHEN c.lease_id IS NOT NULL AND EXISTS (
              SELECT 1 FROM spool.job_history h
              WHERE h.organization_id = $1 AND h.job_id = j.id AND h.event = 'timeout' AND h.lease_id = c.lease_id)
              THEN 'timed_out'
            ELSE spool.job_fence(j, c.worker_id, c.lease_id) END AS outcome
FROM unnest($2::uuid[], $3::text[], $4::uuid[]) WITH ORDINALITY AS c(id, worker_id, lease_id, ord)
LEFT JOIN spool.jobs j ON j.organization_id = $1 AND j.id = c.id
ORDER BY c.ord;
