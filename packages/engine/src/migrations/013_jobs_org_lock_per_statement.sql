-- The foreign key jobs.organization_id -> organizations checked every
-- inserted job with its own lookup and row lock: about 5 µs a row, 14% of a
-- bulk enqueue's throughput (docs/performance.md). It did two things, both
-- kept without it:
-- - no job for an organization that does not exist: job-insert-many.sql locks
--   the distinct organizations of its batch once per statement
--   (spool.lock_organizations, FOR KEY SHARE, like the key's own check) and
--   fails the statement with the same foreign_key_violation if one is gone;
--   workflow-create.sql inserts its workflow row first, whose own key to
--   organizations takes the same lock;
-- - jobs go with their organization: organization-delete removes them in a
--   statement after deleting the organization row. That delete waits for the
--   KEY SHARE locks of inserts in flight, so the later statement's snapshot
--   sees their jobs and none is left behind.
ALTER TABLE spool.jobs DROP CONSTRAINT jobs_organization_id_fkey;

CREATE FUNCTION spool.lock_organizations(ids uuid[]) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  locked integer;
BEGIN
  SELECT count(*) INTO locked
  FROM (SELECT 1 FROM spool.organizations WHERE id = ANY (ids) FOR KEY SHARE) o;
  IF locked < cardinality(ids) THEN
    RAISE foreign_key_violation USING
      MESSAGE = 'insert on table "jobs" names an organization that does not exist',
      TABLE = 'jobs', SCHEMA = 'spool';
  END IF;
  RETURN true;
END
$$;
