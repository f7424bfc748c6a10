-- Edits a job that waits (pending, scheduled) or has ended in the
-- dead-letter queue (deadletter, failed): PATCH /jobs/{id}. A NULL
-- parameter leaves its field as it is; $5 (payload) and $9 (tags) are JSON
-- text, so that JSON null (a payload of null, tags cleared) differs from
-- "not given". $10 says whether scheduled_at ($11, NULL = now) was given.
--
-- The row is locked and every rule that depends on it is decided here, so
-- a concurrent claim, retry or edit cannot slip between a check and the
-- change. `refusal` names the first rule broken, and nothing is written:
--   status       the job is processing or finished (completed, cancelled);
--   scheduled_at a dead-lettered job runs when it is retried, not at a time;
--   expires_at   the new scheduled_at is not before the job's expires_at;
--   max_retries  below retry_count on a job that may still fail (pending,
--                scheduled), which would dead-letter it at its next failure
--                without the retries it was promised. A dead-lettered job
--                may go below: its replay resets retry_count.
-- A job outside the caller's queues ($3, LIKE patterns; NULL = all) is not
-- found, also when a concurrent edit has just moved it out of them.
--
-- Status follows scheduled_at: a time in the future makes a waiting job
-- scheduled, now or the past makes it pending (and ends a retry backoff);
-- a dead-lettered job stays dead-lettered, and its dead_letter_queue row
-- follows its queue and payload (the DLQ gauges count by that queue).
-- One history row (event `edit`, $4 the actor) lists the changed fields
-- with the old and new values of the small ones (payload and tags are only
-- named); an edit that changes nothing writes nothing.
WITH target AS (
  SELECT j.*
  FROM spool.jobs j
  WHERE j.organization_id = $1 AND j.id = $2
    AND ($3::text[] IS NULL OR j.queue_name LIKE ANY ($3::text[]))
  FOR UPDATE
),
planned AS (
  SELECT t.*,
         CASE WHEN t.status NOT IN ('pending', 'scheduled', 'deadletter', 'failed') THEN 'status'
              WHEN $10::boolean AND t.status NOT IN ('pending', 'scheduled') THEN 'scheduled_at'
              WHEN $10::boolean AND t.expires_at IS NOT NULL AND coalesce($11::timestamptz, now()) >= t.expires_at THEN 'expires_at'
              WHEN $8::integer < t.retry_count AND t.status IN ('pending', 'scheduled') THEN 'max_retries'
         END AS refusal,
         coalesce($5::jsonb, t.payload) AS new_payload,
         coalesce($6::integer, t.priority) AS new_priority,
         coalesce($7::text, t.queue_name) AS new_queue_name,
         coalesce($8::integer, t.max_retries) AS new_max_retries,
         CASE WHEN $9::text IS NULL THEN t.tags WHEN $9::jsonb = 'null'::jsonb THEN NULL ELSE $9::jsonb END AS new_tags,
         CASE WHEN $10::boolean THEN $11::timestamptz ELSE t.scheduled_at END AS new_scheduled_at,
         CASE WHEN NOT $10::boolean OR t.status NOT IN ('pending', 'scheduled') THEN t.status
              WHEN $11::timestamptz > now() THEN 'scheduled'
              ELSE 'pending' END AS new_status
  FROM target t
),
changes AS (
  SELECT p.*,
         array_remove(ARRAY[
           CASE WHEN p.new_payload IS DISTINCT FROM p.payload THEN 'payload' END,
           CASE WHEN p.new_priority <> p.priority THEN 'priority' END,
           CASE WHEN p.new_queue_name <> p.queue_name THEN 'queue_name' END,
           CASE WHEN p.new_max_retries <> p.max_retries THEN 'max_retries' END,
           CASE WHEN p.new_tags IS DISTINCT FROM p.tags THEN 'tags' END,
           CASE WHEN p.new_scheduled_at IS DISTINCT FROM p.scheduled_at OR ($10::boolean AND p.in_backoff) THEN 'scheduled_at' END
         ], NULL) AS fields
  FROM planned p
  WHERE p.refusal IS NULL
),
edited AS (
  UPDATE spool.jobs j
  SET payload = c.new_payload,
      priority = c.new_priority,
      queue_name = c.new_queue_name,
      max_retries = c.new_max_retries,
      tags = c.new_tags,
      scheduled_at = c.new_scheduled_at,
      status = c.new_status,
      in_backoff = CASE WHEN $10::boolean THEN false ELSE j.in_backoff END,
      updated_at = now()
  FROM changes c
  WHERE j.id = c.id AND (cardinality(c.fields) > 0 OR c.new_status <> c.status)
  RETURNING j.*
),
dead_letter AS (
  UPDATE spool.dead_letter_queue d
  SET queue_name = e.queue_name, payload = e.payload
  FROM edited e
  WHERE d.job_id = e.id AND (d.queue_name <> e.queue_name OR d.payload IS DISTINCT FROM e.payload)
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT e.organization_id, e.id, e.queue_name, 'edit', c.status, e.status, $4::text,
         jsonb_build_object(
           'fields', to_jsonb(c.fields),
           'from', jsonb_strip_nulls(jsonb_build_object(
             'status', CASE WHEN c.new_status <> c.status THEN c.status END,
             'priority', CASE WHEN 'priority' = ANY (c.fields) THEN c.priority END,
             'queue_name', CASE WHEN 'queue_name' = ANY (c.fields) THEN c.queue_name END,
             'max_retries', CASE WHEN 'max_retries' = ANY (c.fields) THEN c.max_retries END,
             'scheduled_at', CASE WHEN 'scheduled_at' = ANY (c.fields) THEN c.scheduled_at END)),
           'to', jsonb_strip_nulls(jsonb_build_object(
             'status', CASE WHEN e.status <> c.status THEN e.status END,
             'priority', CASE WHEN 'priority' = ANY (c.fields) THEN e.priority END,
             'queue_name', CASE WHEN 'queue_name' = ANY (c.fields) THEN e.queue_name END,
             'max_retries', CASE WHEN 'max_retries' = ANY (c.fields) THEN e.max_retries END,
             'scheduled_at', CASE WHEN 'scheduled_at' = ANY (c.fields) THEN e.scheduled_at END)))
  FROM edited e
  JOIN changes c ON c.id = e.id
)
SELECT e.*, p.status AS previous_status, p.queue_name AS previous_queue_name, p.retry_count AS previous_retry_count,
       p.expires_at AS previous_expires_at, p.refusal,
       -- Claimers of the job's queue wake when it became claimable there; the promoter when it is due later.
       (SELECT pg_notify('spool_jobs', json_build_object(
                 'q', CASE WHEN e.status = 'pending' THEN ARRAY[e.organization_id::text || ':' || e.queue_name] ELSE ARRAY[]::text[] END,
                 's', CASE WHEN e.status = 'scheduled' THEN (extract(epoch FROM e.scheduled_at) * 1000)::bigint END)::text)
        WHERE (e.status = 'pending' AND (p.status <> 'pending' OR e.queue_name <> p.queue_name OR p.in_backoff))
           OR (e.status = 'scheduled' AND e.scheduled_at IS DISTINCT FROM p.scheduled_at)) IS NOT NULL AS notified
FROM planned p
LEFT JOIN edited e ON e.id = p.id;
