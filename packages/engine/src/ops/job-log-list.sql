-- One job's log lines after seq $3, oldest first, at most $4 (job_logs_pkey).
SELECT seq, at, line
FROM spool.job_logs
WHERE organization_id = $1 AND job_id = $2 AND seq > $3
ORDER BY seq
LIMIT $4;
