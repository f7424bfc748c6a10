-- A schedule's jobs take the queue's max_retries, as any job enqueued
-- without one does, unless the schedule was given its own (at creation or
-- by an update): max_retries_set says so, as timeout_set does for the
-- timeout (migration 026). Schedules made before this kept the contract's
-- default, 3; those with another value were given one.
ALTER TABLE spool.schedules ADD COLUMN max_retries_set boolean NOT NULL DEFAULT false;
UPDATE spool.schedules SET max_retries_set = true WHERE max_retries <> 3;
