-- Spool schema, version 1. Every tenant table leads with organization_id so
-- that a distributed PostgreSQL can shard by it later (docs/design.md §5). Each index
-- says which query it serves.

CREATE TABLE spool.organizations (
  id                          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name                        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
  slug                        text NOT NULL CHECK (char_length(slug) BETWEEN 1 AND 100),
  plan_tier                   text NOT NULL DEFAULT 'free' CHECK (plan_tier ~ '^[a-z][a-z0-9_-]{0,49}$'),
  billing_email               text CHECK (char_length(billing_email) <= 255),
  settings                    jsonb NOT NULL DEFAULT '{}'::jsonb,
  custom_limits               jsonb,
  stripe_customer_id          text,
  stripe_subscription_id      text,
  stripe_subscription_status  text,
  stripe_current_period_end   timestamptz,
  stripe_cancel_at_period_end boolean,
  jobs_today                  integer NOT NULL DEFAULT 0 CHECK (jobs_today >= 0),
  jobs_today_date             date NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')::date,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
-- serves: organization lookup by slug (registration, check-slug)
CREATE UNIQUE INDEX organizations_slug_key ON spool.organizations (slug);

CREATE TABLE spool.api_keys (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  name            text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  key_hash        bytea NOT NULL CHECK (octet_length(key_hash) = 32),
  key_prefix      text NOT NULL,
  queues          text[] NOT NULL DEFAULT '{}',
  rate_limit      integer CHECK (rate_limit BETWEEN 1 AND 100000),
  is_active       boolean NOT NULL DEFAULT true,
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_used       timestamptz,
  expires_at      timestamptz
);
-- serves: authentication (SHA-256 of the presented key -> key row)
CREATE UNIQUE INDEX api_keys_key_hash_key ON spool.api_keys (key_hash);
-- serves: GET /api-keys (per organization, newest first)
CREATE INDEX api_keys_org_idx ON spool.api_keys (organization_id, created_at DESC);

CREATE TABLE spool.jobs (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id    uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  queue_name         text NOT NULL CHECK (queue_name ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$'),
  status             text NOT NULL CHECK (status IN ('pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled')),
  payload            jsonb NOT NULL,
  result             jsonb,
  retry_count        integer NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
  max_retries        integer NOT NULL DEFAULT 3 CHECK (max_retries BETWEEN 0 AND 100),
  last_error         text CHECK (char_length(last_error) <= 4096),
  created_at         timestamptz NOT NULL DEFAULT now(),
  scheduled_at       timestamptz,
  started_at         timestamptz,
  completed_at       timestamptz,
  expires_at         timestamptz,
  priority           integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  tags               jsonb CHECK (tags IS NULL OR jsonb_typeof(tags) = 'object'),
  timeout_seconds    integer NOT NULL DEFAULT 300 CHECK (timeout_seconds BETWEEN 1 AND 86400),
  parent_job_id      uuid,
  completion_webhook text CHECK (char_length(completion_webhook) <= 2048),
  assigned_worker_id text CHECK (char_length(assigned_worker_id) <= 255),
  lease_id           uuid,
  lease_expires_at   timestamptz,
  idempotency_key    text CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  workflow_id        uuid,
  workflow_key       text,
  dependency_mode    text CHECK (dependency_mode IN ('all', 'any')),
  dependencies_met   boolean,
  cancel_requested_at timestamptz,
  -- A job holds a lease exactly while it is processing (fencing relies on it).
  CONSTRAINT jobs_lease_iff_processing CHECK (
    (status = 'processing') = (lease_id IS NOT NULL AND lease_expires_at IS NOT NULL AND assigned_worker_id IS NOT NULL)
  ),
  -- A finished job has completed_at; an unfinished one has none.
  CONSTRAINT jobs_finished_iff_completed_at CHECK (
    (status IN ('completed', 'failed', 'deadletter', 'cancelled')) = (completed_at IS NOT NULL)
  ),
  CONSTRAINT jobs_scheduled_has_time CHECK (status <> 'scheduled' OR scheduled_at IS NOT NULL)
);

-- serves: ops/job-claim.sql. The predicate matches the claim's WHERE exactly,
-- so finished, processing and future-scheduled rows are never in the way and
-- the plan cannot flip to a sequential scan as the table grows.
CREATE INDEX jobs_claim_idx ON spool.jobs (organization_id, queue_name, priority DESC, created_at, id)
  WHERE status = 'pending' AND dependencies_met IS NOT FALSE;
-- serves: ops/job-insert-many.sql (idempotency: one job per organization and key)
CREATE UNIQUE INDEX jobs_idempotency_key ON spool.jobs (organization_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- serves: ops/job-promote-scheduled.sql and the promoter's "next due" probe
CREATE INDEX jobs_scheduled_idx ON spool.jobs (scheduled_at) WHERE status = 'scheduled';
-- serves: ops/job-rescue-expired.sql (lease reaper)
CREATE INDEX jobs_lease_expiry_idx ON spool.jobs (lease_expires_at) WHERE status = 'processing';
-- serves: ops/job-expire.sql (jobs whose expires_at passed before they started)
CREATE INDEX jobs_expires_idx ON spool.jobs (expires_at)
  WHERE status IN ('pending', 'scheduled') AND expires_at IS NOT NULL;
-- serves: GET /jobs, GET /jobs/stats, queue stats (per organization, by queue and status)
CREATE INDEX jobs_org_queue_status_idx ON spool.jobs (organization_id, queue_name, status, created_at DESC);
-- serves: GET /jobs without a queue filter (newest first)
CREATE INDEX jobs_org_created_idx ON spool.jobs (organization_id, created_at DESC);
-- serves: ops/job-release-worker.sql (a deregistered worker's processing jobs)
CREATE INDEX jobs_worker_idx ON spool.jobs (organization_id, assigned_worker_id) WHERE status = 'processing';
-- serves: workflow views and dependency release
CREATE INDEX jobs_workflow_idx ON spool.jobs (organization_id, workflow_id) WHERE workflow_id IS NOT NULL;

-- Every transition of every job, written in the same statement as the
-- transition. The identity id is the event log position that realtime
-- streams and outgoing webhooks read from.
CREATE TABLE spool.job_history (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  job_id          uuid NOT NULL,
  queue_name      text NOT NULL,
  event           text NOT NULL,
  from_status     text CHECK (from_status IN ('pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled')),
  to_status       text CHECK (to_status IN ('pending', 'scheduled', 'processing', 'completed', 'failed', 'deadletter', 'cancelled')),
  worker_id       text,
  lease_id        uuid,
  message         text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: job audit trail (GET history of one job)
CREATE INDEX job_history_job_idx ON spool.job_history (organization_id, job_id, id);

CREATE TABLE spool.dead_letter_queue (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  job_id          uuid NOT NULL REFERENCES spool.jobs (id) ON DELETE CASCADE,
  queue_name      text NOT NULL,
  payload         jsonb NOT NULL,
  error           text,
  retry_count     integer NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: DLQ membership (one row per dead-lettered job; removed on replay)
CREATE UNIQUE INDEX dead_letter_queue_job_key ON spool.dead_letter_queue (job_id);
-- serves: DLQ listing per organization and queue, newest first
CREATE INDEX dead_letter_queue_org_idx ON spool.dead_letter_queue (organization_id, queue_name, created_at DESC);

CREATE TABLE spool.queue_config (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id   uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  queue_name        text NOT NULL CHECK (queue_name ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$'),
  max_retries       integer NOT NULL DEFAULT 3 CHECK (max_retries BETWEEN 0 AND 100),
  default_timeout   integer NOT NULL DEFAULT 300 CHECK (default_timeout BETWEEN 1 AND 86400),
  rate_limit        integer CHECK (rate_limit BETWEEN 1 AND 100000),
  enabled           boolean NOT NULL DEFAULT true,
  paused_at         timestamptz,
  pause_reason      text CHECK (char_length(pause_reason) <= 500),
  backoff_base_ms   integer NOT NULL DEFAULT 1000 CHECK (backoff_base_ms BETWEEN 0 AND 86400000),
  backoff_max_ms    integer NOT NULL DEFAULT 60000 CHECK (backoff_max_ms BETWEEN 0 AND 86400000),
  backoff_jitter_ms integer NOT NULL DEFAULT 500 CHECK (backoff_jitter_ms BETWEEN 0 AND 3600000),
  concurrency_limit integer CHECK (concurrency_limit BETWEEN 1 AND 100000),
  settings          jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT queue_config_paused_consistent CHECK (enabled OR paused_at IS NOT NULL)
);
-- serves: claim's paused check, fail's backoff lookup, GET /queues/{name}
CREATE UNIQUE INDEX queue_config_org_queue_key ON spool.queue_config (organization_id, queue_name);

CREATE TABLE spool.workers (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  queue_name      text NOT NULL,
  queue_names     text[] NOT NULL DEFAULT '{}',
  hostname        text NOT NULL CHECK (char_length(hostname) BETWEEN 1 AND 255),
  worker_type     text CHECK (char_length(worker_type) <= 50),
  max_concurrency integer NOT NULL DEFAULT 5 CHECK (max_concurrency BETWEEN 1 AND 1000),
  current_jobs    integer NOT NULL DEFAULT 0 CHECK (current_jobs BETWEEN 0 AND 100000),
  status          text NOT NULL DEFAULT 'healthy' CHECK (status IN ('healthy', 'degraded', 'draining', 'offline')),
  last_heartbeat  timestamptz NOT NULL DEFAULT now(),
  metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
  version         text CHECK (char_length(version) <= 50),
  registered_at   timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
-- serves: GET /workers (per organization, most recent heartbeat first)
CREATE INDEX workers_org_heartbeat_idx ON spool.workers (organization_id, last_heartbeat DESC);
-- serves: worker liveness sweep (live workers whose heartbeat is old)
CREATE INDEX workers_live_heartbeat_idx ON spool.workers (last_heartbeat) WHERE status <> 'offline';

CREATE TABLE spool.schedules (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id  uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  name             text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
  description      text CHECK (char_length(description) <= 1000),
  cron_expression  text NOT NULL CHECK (char_length(cron_expression) BETWEEN 1 AND 255),
  timezone         text NOT NULL DEFAULT 'UTC',
  queue_name       text NOT NULL CHECK (queue_name ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$'),
  payload_template jsonb NOT NULL,
  priority         integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  max_retries      integer NOT NULL DEFAULT 3 CHECK (max_retries BETWEEN 0 AND 100),
  timeout_seconds  integer NOT NULL DEFAULT 300 CHECK (timeout_seconds BETWEEN 1 AND 86400),
  is_active        boolean NOT NULL DEFAULT true,
  missed_policy    text NOT NULL DEFAULT 'once' CHECK (missed_policy IN ('skip', 'once', 'all')),
  last_run_at      timestamptz,
  next_run_at      timestamptz,
  run_count        integer NOT NULL DEFAULT 0 CHECK (run_count >= 0),
  tags             jsonb,
  metadata         jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
-- serves: GET /schedules (per organization, newest first)
CREATE INDEX schedules_org_idx ON spool.schedules (organization_id, created_at DESC);
-- serves: schedule firing (active schedules by next due time)
CREATE INDEX schedules_due_idx ON spool.schedules (next_run_at) WHERE is_active;

CREATE TABLE spool.schedule_runs (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES spool.organizations (id) ON DELETE CASCADE,
  schedule_id     uuid NOT NULL REFERENCES spool.schedules (id) ON DELETE CASCADE,
  fire_time       timestamptz NOT NULL,
  manual          boolean NOT NULL DEFAULT false,
  job_id          uuid,
  status          text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
  error_message   text,
  started_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz
);
-- serves: exactly-once firing: one run per (schedule, cron tick) whatever the number of replicas
CREATE UNIQUE INDEX schedule_runs_tick_key ON spool.schedule_runs (schedule_id, fire_time) WHERE NOT manual;
-- serves: GET /schedules/{id}/history (newest first)
CREATE INDEX schedule_runs_schedule_idx ON spool.schedule_runs (organization_id, schedule_id, started_at DESC);

-- Leadership and other named leases (a row, not a session advisory lock, so
-- it works through PgBouncer in transaction mode).
CREATE TABLE spool.leader_leases (
  name       text PRIMARY KEY,
  holder     text NOT NULL,
  expires_at timestamptz NOT NULL,
  acquired_at timestamptz NOT NULL DEFAULT now()
);

-- The one backoff function (docs/design.md §4): exponential from base_ms, capped at
-- cap_ms, plus uniform jitter in [0, jitter_ms). attempt counts from 0.
CREATE FUNCTION spool.backoff_ms(attempt integer, base_ms integer, cap_ms integer, jitter_ms integer)
RETURNS double precision LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT least(base_ms::double precision * power(2::double precision, least(greatest(attempt, 0), 40)), cap_ms::double precision)
         + random() * jitter_ms
$$;
