-- Moves each fired schedule to its next tick and counts the runs it made.
-- A schedule whose expression no longer fires (or failed to evaluate) gets
-- next_run_at NULL and stops being due.
UPDATE spool.schedules s
SET next_run_at = t.next_run_at,
    run_count = s.run_count + t.fired,
    last_run_at = CASE WHEN t.fired > 0 THEN now() ELSE s.last_run_at END
FROM unnest($1::uuid[], $2::timestamptz[], $3::int[]) AS t(id, next_run_at, fired)
WHERE s.id = t.id;
