-- Which of the candidate jobs ($3) depend, directly or transitively, on job
-- $2 (or are $2)? Making $2 depend on one of them would close a cycle.
-- UNION (not UNION ALL) stops on repeated nodes.
WITH RECURSIVE closure(id) AS (
  SELECT $2::uuid
  UNION
  SELECT d.job_id
  FROM spool.job_dependencies d
  JOIN closure c ON d.depends_on_job_id = c.id
  WHERE d.organization_id = $1
)
SELECT id FROM closure WHERE id = ANY($3::uuid[]);
