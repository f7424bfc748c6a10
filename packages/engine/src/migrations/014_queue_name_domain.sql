-- The queue-name rule as a domain instead of a CHECK on each table.
-- PostgreSQL evaluates every CHECK constraint of a table on every UPDATE of
-- a row, whatever the UPDATE changed, and the queue-name regex was the
-- costliest of the jobs table's: a claim and a completion each matched it
-- again against a name that never changes (~6 µs of the ~65 µs of database
-- CPU a drained job costs, bench/sql-drain.ts; docs/performance.md). A
-- domain's CHECK runs where a value is converted to the domain, i.e. when
-- the column is written (INSERT, or an UPDATE that sets it), which is the
-- only time the rule can be broken.
--
-- Order chosen so that no table is rewritten: a text column changes to a
-- domain over text without constraints in place (binary-compatible, indexes
-- kept); adding the constraint to the domain then checks the existing
-- values with a scan; the old CHECKs go last, so the rule holds throughout.
CREATE DOMAIN spool.queue_name AS text;

ALTER TABLE spool.jobs ALTER COLUMN queue_name TYPE spool.queue_name;
ALTER TABLE spool.queue_config ALTER COLUMN queue_name TYPE spool.queue_name;
ALTER TABLE spool.schedules ALTER COLUMN queue_name TYPE spool.queue_name;

ALTER DOMAIN spool.queue_name ADD CONSTRAINT queue_name_format
  CHECK (VALUE ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$');

ALTER TABLE spool.jobs DROP CONSTRAINT jobs_queue_name_check;
ALTER TABLE spool.queue_config DROP CONSTRAINT queue_config_queue_name_check;
ALTER TABLE spool.schedules DROP CONSTRAINT schedules_queue_name_check;
