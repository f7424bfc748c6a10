-- Deletes a queue's config (never its jobs), refused while the queue still
-- has pending or processing jobs. `existed` reads the statement's snapshot,
-- i.e. whether the config was there before this delete.
WITH busy AS (
  SELECT EXISTS (
    SELECT 1 FROM spool.jobs
    WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND status <> 'processing'
  ) OR EXISTS (
    SELECT 1 FROM spool.jobs
    WHERE organization_id = $1 AND queue_name = $2 AND status = 'processing'
  ) AS busy
),
deleted AS (
  DELETE FROM spool.queue_config q
  USING busy b
  WHERE q.organization_id = $1 AND q.queue_name = $2 AND NOT b.busy
  RETURNING q.id
)
SELECT EXISTS (SELECT 1 FROM spool.queue_config WHERE organization_id = $1 AND queue_name = $2) AS existed,
       (SELECT busy FROM busy) AS busy,
       EXISTS (SELECT 1 FROM deleted) AS deleted;
