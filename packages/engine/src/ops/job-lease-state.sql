-- Explains a fenced operation that changed nothing: missing job, not
-- processing, another owner, or another lease; or an attempt that timed out
-- (migration 026): its deadline passed while it still holds the lease, or
-- the reaper already ended it (its `timeout` rows name the leases it ended;
-- read only for a refusal, through job_history_job_idx).
SELECT j.id, j.status, j.assigned_worker_id, j.lease_id,
       coalesce(j.lease_id IS NOT NULL AND j.deadline_at <= now(), false) AS past_deadline,
       ARRAY(SELECT h.lease_id FROM spool.job_history h
             WHERE h.organization_id = $1 AND h.job_id = j.id AND h.event = 'timeout' AND h.lease_id IS NOT NULL) AS timed_out_leases
FROM spool.jobs j
WHERE j.organization_id = $1 AND j.id = ANY($2::uuid[]);
