-- Links claimed runs to the jobs created for them in the same transaction.
UPDATE spool.schedule_runs r
SET job_id = t.job_id, status = 'completed', completed_at = clock_timestamp()
FROM unnest($1::uuid[], $2::uuid[]) AS t(run_id, job_id)
WHERE r.id = t.run_id;
