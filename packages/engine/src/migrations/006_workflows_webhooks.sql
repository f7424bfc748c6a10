-- Workflows (DAGs of jobs), job dependencies, outgoing webhooks and their
-- durable delivery queue (docs/workflows.md, docs/webhooks.md).

-- Dependency bookkeeping on the dependent job. dependencies_remaining counts
-- dependencies not yet completed; completions decrement it with an UPDATE, so
-- two dependencies completing in concurrent transactions serialize on the
-- dependent's row (a recount from a statement snapshot would let both miss
-- the other: write skew). dependents_xid is stamped on a job when a
-- dependency on it is added to an existing job: a completion whose snapshot
-- cannot see that transaction recounts its dependents afterwards.
-- Both are nullable without a default: adding them rewrites nothing.
ALTER TABLE spool.jobs
  ADD COLUMN dependencies_remaining integer CHECK (dependencies_remaining >= 0),
  ADD COLUMN dependents_xid xid8;

-- serves: the webhook dispatcher's lookup of completed jobs that have a
-- completion_webhook (ops/webhook-dispatch.sql): most jobs have none, so the
-- probe per completion stays in a tiny index.
CREATE INDEX jobs_completion_webhook_idx ON spool.jobs (organization_id, id) WHERE completion_webhook IS NOT NULL;

CREATE TABLE spool.workflows (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  name            text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
  description     text CHECK (char_length(description) <= 1000),
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  total_jobs      integer NOT NULL CHECK (total_jobs >= 0),
  completed_jobs  integer NOT NULL DEFAULT 0 CHECK (completed_jobs >= 0),
  -- failed + deadletter
  failed_jobs     integer NOT NULL DEFAULT 0 CHECK (failed_jobs >= 0),
  cancelled_jobs  integer NOT NULL DEFAULT 0 CHECK (cancelled_jobs >= 0),
  -- pending/scheduled jobs whose dependencies are not met
  blocked_jobs    integer NOT NULL DEFAULT 0 CHECK (blocked_jobs >= 0),
  metadata        jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  completed_at    timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: GET /workflows (per organization, newest first)
CREATE INDEX workflows_org_idx ON spool.workflows (organization_id, created_at DESC);

-- "job_id depends on depends_on_job_id". No foreign keys to jobs: a cascade
-- would add a lookup to every job deletion (retention, DLQ purge); an edge to
-- a deleted job simply never completes.
CREATE TABLE spool.job_dependencies (
  organization_id   uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  job_id            uuid NOT NULL,
  depends_on_job_id uuid NOT NULL,
  dependency_type   text NOT NULL DEFAULT 'completion' CHECK (char_length(dependency_type) BETWEEN 1 AND 50),
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, job_id, depends_on_job_id),
  CHECK (job_id <> depends_on_job_id)
);
-- serves: releasing dependents when a job completes (ops/job-complete-many.sql)
CREATE INDEX job_dependencies_parent_idx ON spool.job_dependencies (organization_id, depends_on_job_id);

-- A workflow's status from its counters (docs/compatibility.md §3.10). Jobs that are
-- neither finished nor blocked can still run; once none can, the workflow
-- has ended: failed if any job failed, else cancelled (a cancelled job left
-- its dependents blocked). Called by every statement that moves a workflow job.
CREATE FUNCTION spool.workflow_status(current_status text, started boolean, total integer, completed integer,
                                      failed integer, cancelled integer, blocked integer)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN current_status = 'cancelled' THEN 'cancelled'
    WHEN completed >= total THEN 'completed'
    WHEN total - completed - failed - cancelled - blocked <= 0 THEN CASE WHEN failed > 0 THEN 'failed' ELSE 'cancelled' END
    WHEN current_status = 'pending' AND NOT started THEN 'pending'
    ELSE 'running'
  END
$$;

CREATE TABLE spool.outgoing_webhooks (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id   uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  name              text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
  url               text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
  events            text[] NOT NULL CHECK (cardinality(events) >= 1),
  secret            text CHECK (char_length(secret) <= 255),
  enabled           boolean NOT NULL DEFAULT true,
  failure_count     integer NOT NULL DEFAULT 0 CHECK (failure_count >= 0),
  last_triggered_at timestamptz,
  last_status       text CHECK (last_status IN ('success', 'failed')),
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
-- serves: GET /outgoing-webhooks and the dispatcher's "who wants this event" join
CREATE INDEX outgoing_webhooks_org_idx ON spool.outgoing_webhooks (organization_id, created_at DESC);

-- The durable delivery queue: one row per (target, event). A row is created
-- from the job history by the dispatcher (or by `test`/manual sends) and
-- survives restarts. attempts counts claimed attempts: a claim pushes
-- next_attempt_at forward, so an attempt is made by one process only, and a
-- process that dies mid-attempt leaves the row to be retried.
CREATE TABLE spool.webhook_deliveries (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  -- null for a job's completion_webhook
  webhook_id      uuid REFERENCES spool.outgoing_webhooks (id) ON DELETE CASCADE,
  job_id          uuid,
  -- the job_history row this delivery announces (null for test sends)
  history_id      bigint,
  -- target of a completion_webhook delivery; webhook deliveries use the webhook's current url
  url             text CHECK (char_length(url) <= 2048),
  event           text NOT NULL CHECK (char_length(event) BETWEEN 1 AND 100),
  payload         jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'success', 'failed')),
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts    integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  status_code     integer,
  response_body   text CHECK (char_length(response_body) <= 500),
  error           text CHECK (char_length(error) <= 2000),
  created_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_deliveries_has_target CHECK (webhook_id IS NOT NULL OR url IS NOT NULL)
);
-- serves: the delivery service's claim (due pending rows, oldest first)
CREATE INDEX webhook_deliveries_due_idx ON spool.webhook_deliveries (next_attempt_at) WHERE status = 'pending';
-- serves: GET /outgoing-webhooks/{id}/deliveries (newest first)
CREATE INDEX webhook_deliveries_webhook_idx ON spool.webhook_deliveries (organization_id, webhook_id, created_at DESC);
-- serves: idempotent dispatch (re-reading history after a restart creates nothing twice)
CREATE UNIQUE INDEX webhook_deliveries_event_key ON spool.webhook_deliveries (history_id, webhook_id) WHERE history_id IS NOT NULL AND webhook_id IS NOT NULL;
-- serves: idempotent dispatch of job completion_webhook deliveries (one per history row)
CREATE UNIQUE INDEX webhook_deliveries_completion_key ON spool.webhook_deliveries (history_id) WHERE history_id IS NOT NULL AND webhook_id IS NULL;

-- Readers of the job history that must survive restarts (the webhook
-- dispatcher): how far they have read, and which ids below that were not yet
-- visible (transactions commit out of id order) with the snapshot horizon
-- after which each is settled. One row per reader, locked while it reads.
CREATE TABLE spool.event_cursors (
  name       text PRIMARY KEY,
  scanned_to bigint NOT NULL,
  gaps       jsonb NOT NULL DEFAULT '[]'::jsonb,
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Start after the history that exists now: events from before this version
-- are not announced.
INSERT INTO spool.event_cursors (name, scanned_to)
SELECT 'webhooks', coalesce(max(id), 0) FROM spool.job_history;
