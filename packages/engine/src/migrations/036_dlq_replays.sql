-- Paced DLQ replays (docs/jobs-api.md, "Paced DLQ replays"): a replay of
-- more dead letters than the contract's POST /jobs/dlq/retry takes (100) is
-- an asynchronous operation with an id, progress and cancel, run by every
-- server's DlqReplayer (services/dlq-replayer.ts) a batch at a time, at
-- most `per_second` jobs a second across all of them.
--
-- Which jobs a replay moves is decided once, when it is created: their ids
-- are written to dlq_replay_jobs in replay order (oldest first), and the
-- count is `total`. Each batch deletes the next ones from that list in the
-- statement that moves them deadletter -> pending, so a job is replayed at
-- most once however often a batch is retried after a crash, and a job that
-- fails again into the DLQ during the replay is not replayed again by it.
CREATE TABLE spool.dlq_replays (
  organization_id  uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  status           text NOT NULL CHECK (status IN ('running', 'completed', 'cancelled', 'failed')),
  -- The filter as given (NULL = not filtered on). job_ids_count: how many
  -- ids the request listed (the ids themselves are the rows of
  -- dlq_replay_jobs that matched); error_contains: a substring of
  -- last_error, case-insensitive; max_jobs: at most this many, oldest first.
  queue_name       spool.queue_name,
  job_ids_count    integer CHECK (job_ids_count >= 1),
  error_contains   text CHECK (char_length(error_contains) BETWEEN 1 AND 500),
  created_after    timestamptz,
  created_before   timestamptz,
  max_jobs         integer NOT NULL CHECK (max_jobs BETWEEN 1 AND 100000),
  -- The creating key's queues as LIKE patterns (NULL = every queue): each
  -- batch moves only jobs still in them, and only keys whose queues cover
  -- them see the replay (spool.dlq_replay_within below).
  queue_scope      text[],
  -- Edits applied to each job as it is replayed (NULL = unchanged), as
  -- PATCH /jobs/{id} would make them; edit_queue_name moves the job.
  edit_priority    integer CHECK (edit_priority BETWEEN -100 AND 100),
  edit_max_retries integer CHECK (edit_max_retries BETWEEN 0 AND 100),
  edit_queue_name  spool.queue_name,
  -- Pace: NULL = as fast as batches go. batch_size is derived from it at
  -- creation (about ten batches a second), next_batch_at is when the next
  -- batch may start: each batch pushes it by (jobs replayed) / per_second,
  -- under the row's lock, so the pace holds across every server.
  per_second       integer CHECK (per_second BETWEEN 1 AND 10000),
  batch_size       integer NOT NULL CHECK (batch_size BETWEEN 1 AND 1000),
  next_batch_at    timestamptz NOT NULL DEFAULT now(),
  total            integer NOT NULL CHECK (total >= 0),
  -- The list's positions up to here have been taken by batches: the next
  -- batch starts after it (an index range, not a walk past deleted rows).
  taken_upto       integer NOT NULL DEFAULT 0,
  done             integer NOT NULL DEFAULT 0 CHECK (done >= 0),
  -- Listed jobs that were no longer dead-lettered (retried, purged, moved
  -- out of the filter's queue) when their turn came.
  skipped          integer NOT NULL DEFAULT 0 CHECK (skipped >= 0),
  -- Who asked (as job_history.actor, migration 031); every job's `retry`
  -- history row carries it, with details {replay_id}.
  created_by       text NOT NULL CHECK (char_length(created_by) <= 255),
  cancelled_by     text CHECK (char_length(cancelled_by) <= 255),
  -- The last batch's failure; error_count consecutive ones (reset by a
  -- batch that succeeds). At 5 the replay is failed.
  error            text CHECK (char_length(error) <= 2000),
  error_count      integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz,
  PRIMARY KEY (organization_id, id),
  CHECK ((status = 'running') = (finished_at IS NULL)),
  CHECK (done + skipped <= total)
);
-- serves: ops/dlq-replay-list.sql (an organization's replays, newest first)
-- and the running-replays count of ops/dlq-replay-create.sql
CREATE INDEX dlq_replays_org_created_idx ON spool.dlq_replays (organization_id, created_at DESC, id DESC);
-- serves: ops/dlq-replay-due.sql (the replays whose next batch is due, every organization)
CREATE INDEX dlq_replays_due_idx ON spool.dlq_replays (next_batch_at) WHERE status = 'running';
-- serves: ops/dlq-replay-prune.sql (finished replays past their retention)
CREATE INDEX dlq_replays_finished_idx ON spool.dlq_replays (finished_at) WHERE status <> 'running';

-- The jobs a running replay has still to move, in replay order. Rows go
-- when their batch runs, or all at once when the replay is cancelled or
-- fails (or by cascade with the replay).
CREATE TABLE spool.dlq_replay_jobs (
  organization_id uuid NOT NULL,
  replay_id       uuid NOT NULL,
  position        integer NOT NULL,
  job_id          uuid NOT NULL,
  -- serves: ops/dlq-replay-batch.sql (the next batch_size rows of a replay)
  PRIMARY KEY (organization_id, replay_id, position),
  FOREIGN KEY (organization_id, replay_id) REFERENCES spool.dlq_replays (organization_id, id) ON DELETE CASCADE
);

-- serves: ops/dlq-replay-create.sql (the oldest dead letters of an
-- organization in any queue; with a queue the planner may take
-- jobs_org_queue_status_idx). Only dead-lettered rows have entries.
CREATE INDEX jobs_deadletter_idx ON spool.jobs (organization_id, created_at, id) WHERE status = 'deadletter';

-- Whether a key whose queues are `patterns` (LIKE patterns, NULL = every
-- queue) may see and cancel a replay: every queue the replay can touch must
-- be one of the key's. A replay of one queue touches that queue; one
-- without a queue touches its creator's queues (queue_scope), each of which
-- must be covered by one of the key's patterns (equal, or within a
-- "prefix%" pattern); one made by a key of every queue without a queue
-- only keys of every queue reach. A move (edit_queue_name) touches the
-- target queue too. Queue names hold no % or \ (spool.queue_name), so a
-- trailing % of a key's pattern is always its wildcard.
CREATE FUNCTION spool.dlq_replay_within(queue_name text, queue_scope text[], move_to text, patterns text[]) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN patterns IS NULL OR (
    (move_to IS NULL OR move_to LIKE ANY (patterns))
    AND CASE WHEN queue_name IS NOT NULL THEN queue_name LIKE ANY (patterns)
             ELSE queue_scope IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM unnest(queue_scope) AS s(pattern)
               WHERE NOT EXISTS (
                 SELECT 1 FROM unnest(patterns) AS k(pattern)
                 WHERE s.pattern = k.pattern OR (right(k.pattern, 1) = '%' AND starts_with(s.pattern, left(k.pattern, -1)))))
        END);
