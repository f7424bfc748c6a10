-- Per-queue activity history (docs/history.md): what happened in each queue
-- per minute and per hour, rolled up from spool.job_history by the leader's
-- QueueStatsRollup. The rollup reads the log in id order behind its cursor
-- ('queue-stats' in spool.event_cursors, see history-cursor.ts) and adds one
-- row per (organization, queue, minute) and per (organization, queue, hour):
-- the cost follows the log's new rows, never the jobs kept, and the hot path
-- writes nothing more than it already does.
--
-- Durations are kept as sparse log-scale histograms that merge by addition
-- (spool.stats_hist_add), so hours, queues and whole organizations combine
-- exactly and percentiles are read from the merged buckets: bucket 0 holds
-- values under 1 ms, bucket k >= 1 holds [2^((k-1)/4), 2^(k/4)) ms, four
-- buckets per doubling (a value read back as its bucket's geometric middle
-- is within 9.1 % of the truth). A histogram is a bigint[] of
-- (bucket << 40 | count), ascending by bucket, one element per non-empty
-- bucket: a minute of one queue holds a few dozen elements, not a fixed
-- array of every bucket.
--
-- Retention without deleting rows: each table is a ring of list partitions
-- by `slot`, a function of the bucket's time. Minutes: one partition per
-- UTC day, 9 of them (the seven days before today, today, and tomorrow's,
-- emptied ahead of time). Hours: one per 10-day slice, 11 of them (the nine
-- slices before the current one, so 90 to 100 days, the current one and
-- the next one). The rollup empties the next partition
-- with TRUNCATE before its time comes (queue-stats-rotate.sql), so old rows
-- go whole: no dead tuples, no vacuum, no index entries to remove, and no
-- partition to create at run time. Readers select by bucket, never by slot,
-- so whatever a partition still holds outside its day is never read.
--
-- No foreign keys: an organization's rows go with its jobs
-- (organization-delete-jobs.sql), and a rollup racing that delete leaves at
-- most a minute's rows that the ring removes in time.

CREATE FUNCTION spool.stats_minute(at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT date_bin('1 minute', at, TIMESTAMPTZ '1970-01-01 00:00:00+00') $$;

CREATE FUNCTION spool.stats_hour(at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT date_bin('1 hour', at, TIMESTAMPTZ '1970-01-01 00:00:00+00') $$;

-- The ring position of a minute row (UTC day mod 9) and of an hour row (10-day slice mod 11).
CREATE FUNCTION spool.stats_minute_slot(bucket timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (floor(extract(epoch FROM bucket - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 86400)::bigint % 9)::smallint
$$;

CREATE FUNCTION spool.stats_hour_slot(bucket timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (floor(extract(epoch FROM bucket - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 864000)::bigint % 11)::smallint
$$;

-- The histogram bucket of a duration in ms (see above); the top bucket (2^64 ms) is a cap, never reached.
CREATE FUNCTION spool.stats_bucket(ms double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN ms IS NULL OR ms < 1 THEN 0 ELSE least(256, 1 + floor(4 * ln(ms) / ln(2))::integer) END
$$;

-- Two histograms added bucket by bucket (the rollup's upserts; readers that
-- merge many rows unnest them all at once instead).
CREATE FUNCTION spool.stats_hist_add(a bigint[], b bigint[]) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(array_agg((k << 40) | n ORDER BY k), '{}')
  FROM (
    SELECT e >> 40 AS k, sum(e & 1099511627775)::bigint AS n
    FROM unnest(coalesce(a, '{}') || coalesce(b, '{}')) AS e
    GROUP BY 1
  ) s
$$;

-- Counts of one bucket. started: every claim (re-runs too); failed: failed
-- attempts (reported or an expired lease); retried: failed attempts put back
-- for another try; deadlettered: jobs that failed for good; expired: jobs
-- whose expires_at passed before they ran. wait: first claims, from when the
-- job became runnable; run: completions, from the start of their attempt.
CREATE TABLE spool.queue_stats_minute (
  organization_id uuid NOT NULL,
  queue_name      text NOT NULL,
  bucket          timestamptz NOT NULL,
  slot            smallint NOT NULL,
  enqueued        integer NOT NULL DEFAULT 0,
  started         integer NOT NULL DEFAULT 0,
  completed       integer NOT NULL DEFAULT 0,
  failed          integer NOT NULL DEFAULT 0,
  retried         integer NOT NULL DEFAULT 0,
  deadlettered    integer NOT NULL DEFAULT 0,
  expired         integer NOT NULL DEFAULT 0,
  wait_count      integer NOT NULL DEFAULT 0,
  wait_sum_ms     double precision NOT NULL DEFAULT 0,
  wait_hist       bigint[] NOT NULL DEFAULT '{}',
  run_count       integer NOT NULL DEFAULT 0,
  run_sum_ms      double precision NOT NULL DEFAULT 0,
  run_hist        bigint[] NOT NULL DEFAULT '{}',
  -- serves: the rollup's upsert and one queue's reads
  PRIMARY KEY (organization_id, queue_name, bucket, slot)
) PARTITION BY LIST (slot);

CREATE TABLE spool.queue_stats_hour (LIKE spool.queue_stats_minute INCLUDING DEFAULTS, PRIMARY KEY (organization_id, queue_name, bucket, slot))
  PARTITION BY LIST (slot);

DO $$
BEGIN
  FOR s IN 0..8 LOOP
    EXECUTE format('CREATE TABLE spool.queue_stats_minute_%s PARTITION OF spool.queue_stats_minute FOR VALUES IN (%s)', s, s);
  END LOOP;
  FOR s IN 0..10 LOOP
    EXECUTE format('CREATE TABLE spool.queue_stats_hour_%s PARTITION OF spool.queue_stats_hour FOR VALUES IN (%s)', s, s);
  END LOOP;
END $$;

-- serves: an organization's reads across its queues (the dashboard, the timeseries of every queue)
CREATE INDEX queue_stats_minute_org_idx ON spool.queue_stats_minute (organization_id, bucket);
CREATE INDEX queue_stats_hour_org_idx ON spool.queue_stats_hour (organization_id, bucket);
-- serves: the platform's figures across organizations (GET /admin/stats)
CREATE INDEX queue_stats_minute_bucket_idx ON spool.queue_stats_minute (bucket);
CREATE INDEX queue_stats_hour_bucket_idx ON spool.queue_stats_hour (bucket);

-- The rollup starts at the end of the history that exists now: activity
-- from before this version is not rolled up (the 24 h figures that read it
-- fill up over the day after the upgrade).
INSERT INTO spool.event_cursors (name, scanned_to)
SELECT 'queue-stats', coalesce(max(id), 0) FROM spool.job_history;

-- The job_history rows the rollup has not read yet, with the counters each
-- adds (as queue-stats-rollup.sql defines them): the next 10,000 rows after
-- its cursor (a primary-key range, whatever the table's size) and the ids
-- it still waits for below it (rows of transactions that had not committed
-- when it passed). Readers add these to the rolled-up rows so that counts
-- are exact and current; a rollup more than 10,000 rows behind makes them
-- lag instead of growing the read.
CREATE VIEW spool.queue_stats_pending AS
WITH unread AS (
  -- Subqueries that a caller's filters cannot enter: whatever it filters on,
  -- the rows are found by primary key, and at most 10,000 of them.
  SELECT h.*
  FROM spool.event_cursors c
  CROSS JOIN LATERAL (
    SELECT h.id, h.organization_id, h.queue_name, h.event, h.to_status, h.job_ids, h.created_at
    FROM spool.job_history h
    WHERE h.id > c.scanned_to
    ORDER BY h.id
    LIMIT 10000
  ) h
  WHERE c.name = 'queue-stats'
  UNION ALL
  SELECT h.*
  FROM spool.event_cursors c
  CROSS JOIN LATERAL jsonb_array_elements(c.gaps) AS g(gap)
  CROSS JOIN LATERAL (
    SELECT h.id, h.organization_id, h.queue_name, h.event, h.to_status, h.job_ids, h.created_at
    FROM spool.job_history h
    WHERE h.id = (g.gap ->> 'id')::bigint
    OFFSET 0
  ) h
  WHERE c.name = 'queue-stats'
)
SELECT u.id, u.organization_id, u.queue_name, u.event, u.job_ids, u.created_at,
       CASE WHEN u.event = 'create' THEN n ELSE 0 END AS enqueued,
       CASE WHEN u.event = 'claim' THEN n ELSE 0 END AS started,
       CASE WHEN u.event = 'complete' THEN n ELSE 0 END AS completed,
       CASE WHEN u.event IN ('fail_retry', 'fail_final', 'lease_expired') AND u.to_status IS DISTINCT FROM 'cancelled' THEN n ELSE 0 END AS failed,
       CASE WHEN u.event IN ('fail_retry', 'lease_expired') AND u.to_status IN ('pending', 'scheduled') THEN n ELSE 0 END AS retried,
       CASE WHEN u.to_status IN ('failed', 'deadletter') THEN n ELSE 0 END AS deadlettered,
       CASE WHEN u.event = 'expire' THEN n ELSE 0 END AS expired
FROM unread u
CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.job_ids), 1)::bigint AS n) c;

-- Each queue's counts and duration sums since `since` (to the minute) up to
-- now: whole hours from the hour table, the minutes before the first whole
-- hour and those of the current hour from the minute table, and the rows
-- not rolled up yet (counts only). One row per stored bucket: callers
-- filter by organization and queue (the filters reach every arm: the
-- function is inlined) and add them up.
CREATE FUNCTION spool.queue_activity(since timestamptz)
RETURNS TABLE (organization_id uuid, queue_name text, enqueued bigint, started bigint, completed bigint, failed bigint,
               retried bigint, deadlettered bigint, expired bigint, wait_count bigint, wait_sum_ms double precision,
               run_count bigint, run_sum_ms double precision)
LANGUAGE sql STABLE AS $$
  SELECT m.organization_id, m.queue_name, m.enqueued::bigint, m.started::bigint, m.completed::bigint, m.failed::bigint, m.retried::bigint,
         m.deadlettered::bigint, m.expired::bigint, m.wait_count::bigint, m.wait_sum_ms, m.run_count::bigint, m.run_sum_ms
  FROM spool.queue_stats_minute m
  WHERE m.bucket >= spool.stats_minute(since)
    AND m.bucket < least(spool.stats_hour(spool.stats_minute(since) + interval '59 minutes'), spool.stats_hour(now()))
  UNION ALL
  SELECT m.organization_id, m.queue_name, m.enqueued::bigint, m.started::bigint, m.completed::bigint, m.failed::bigint, m.retried::bigint,
         m.deadlettered::bigint, m.expired::bigint, m.wait_count::bigint, m.wait_sum_ms, m.run_count::bigint, m.run_sum_ms
  FROM spool.queue_stats_minute m
  WHERE m.bucket >= greatest(spool.stats_hour(now()), spool.stats_minute(since))
  UNION ALL
  SELECT h.organization_id, h.queue_name, h.enqueued::bigint, h.started::bigint, h.completed::bigint, h.failed::bigint, h.retried::bigint,
         h.deadlettered::bigint, h.expired::bigint, h.wait_count::bigint, h.wait_sum_ms, h.run_count::bigint, h.run_sum_ms
  FROM spool.queue_stats_hour h
  WHERE h.bucket >= spool.stats_hour(spool.stats_minute(since) + interval '59 minutes')
    AND h.bucket < spool.stats_hour(now())
  UNION ALL
  SELECT p.organization_id, p.queue_name, p.enqueued, p.started, p.completed, p.failed, p.retried, p.deadlettered, p.expired,
         0::bigint, 0::float8, 0::bigint, 0::float8
  FROM spool.queue_stats_pending p
  WHERE p.created_at >= spool.stats_minute(since)
$$;
