-- Changes the priority of a job that has not started yet (PUT
-- /jobs/{id}/priority). A change is an edit of that one field, so it is
-- recorded as PATCH /jobs/{id} records one (job-edit.sql): an `edit` row with
-- the actor ($4) and details {fields, from, to}; a priority set to the value
-- it had writes nothing.
WITH target AS (
  SELECT id, priority AS old_priority
  FROM spool.jobs
  WHERE organization_id = $1 AND id = $2 AND status IN ('pending', 'scheduled')
  FOR UPDATE
),
changed AS (
  UPDATE spool.jobs j
  SET priority = $3, updated_at = now()
  FROM target t
  WHERE j.id = t.id AND j.phase = 'live'
  RETURNING j.id, j.organization_id, j.queue_name, j.status, t.old_priority, j.priority AS new_priority
),
history AS (
  INSERT INTO spool.job_history (organization_id, job_id, queue_name, event, from_status, to_status, actor, details)
  SELECT c.organization_id, c.id, c.queue_name, 'edit', c.status, c.status, $4::text,
         jsonb_build_object('fields', jsonb_build_array('priority'),
                            'from', jsonb_build_object('priority', c.old_priority),
                            'to', jsonb_build_object('priority', c.new_priority))
  FROM changed c
  WHERE c.new_priority <> c.old_priority
)
SELECT id, old_priority, new_priority FROM changed;
