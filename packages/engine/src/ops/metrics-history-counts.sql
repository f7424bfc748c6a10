-- Transitions recorded in job_history after position $1 and up to $2, per
-- queue, event and target status (a row of routine transitions counts its
-- jobs, migration 021). A primary-key range scan: the cost is the number of
-- rows since the previous refresh, whatever the table size.
SELECT organization_id, queue_name, event, coalesce(to_status, '') AS to_status,
       sum(coalesce(cardinality(job_ids), 1))::bigint AS count
FROM spool.job_history
WHERE id > $1 AND id <= $2
  -- An edit (or a job key's debounce or replace) that leaves the status as it was is no transition
  -- (a dead-lettered job edited stays dead-lettered; a debounced scheduled job stays scheduled).
  AND NOT (event IN ('edit', 'debounce', 'replace') AND from_status IS NOT DISTINCT FROM to_status)
GROUP BY organization_id, queue_name, event, to_status;
