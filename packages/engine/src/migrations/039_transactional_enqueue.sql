-- spool.enqueue(): enqueue inside the application's own transaction, when
-- its tables live in the same PostgreSQL as Spool's
-- (docs/transactional-enqueue.md). The job exists if and only if that
-- transaction commits, and claimers are woken at the commit (NOTIFY is
-- delivered then). The API key is checked here as the API checks it: the
-- organization is the key's, never an argument; the key must be active, of
-- an admin or producer role, and reach the queue. Plan limits and job key
-- policies apply. The statements that insert, decide a key and count limits
-- are the server's own (spool.op_* functions, installed from the ops/*.sql
-- files at every start: packages/engine/src/sql-functions.ts).
--
-- Errors abort the caller's transaction, as any failed statement does, with
-- SQLSTATEs a client can map: 28000 the key is not valid, 42501 the key may
-- not do this, 22023 an argument is not valid (the message names it), 54000
-- a plan limit (the message says which), 25001 a job_key under REPEATABLE
-- READ (its check must see other transactions' enqueues).

-- Plan limits per tier, written by the server at every start from its plan
-- table (packages/server/src/plans.ts), so spool.enqueue reads what the API
-- enforces. An organization's custom_limits override them as in planLimits().
CREATE TABLE spool.plan_limits (
  tier   text PRIMARY KEY,
  limits jsonb NOT NULL CHECK (jsonb_typeof(limits) = 'object')
);

-- A UUIDv7 (time-ordered, as the server's ids): PostgreSQL before 18 has no uuidv7().
CREATE FUNCTION spool.uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$$;

CREATE FUNCTION spool.enqueue(api_key text, queue_name text, payload jsonb, options jsonb DEFAULT '{}'::jsonb)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lim constant jsonb := spool.limits();
  opt jsonb := coalesce(options, '{}'::jsonb);
  k record;
  plan jsonb;
  bad text;
  payload_text text := coalesce(payload, 'null'::jsonb)::text;
  jk jsonb;
  key_mode text;
  key_window int;
  key_max_wait int;
  run_at timestamptz;
  after_job uuid;
  outcome text := NULL;
  standing record;
  ins record;
  max_active int;
  per_day int;
  max_payload int;
  actor text;
BEGIN
  -- The key, as api-key-authenticate.sql and http/auth.ts read it.
  SELECT a.id, a.organization_id, a.queues, a.role, a.is_active, a.expires_at, o.plan_tier, o.custom_limits
    INTO k
  FROM spool.api_keys a
  JOIN spool.organizations o ON o.id = a.organization_id
  WHERE a.key_hash = sha256(convert_to(coalesce(api_key, ''), 'UTF8'));
  IF NOT FOUND OR NOT k.is_active OR (k.expires_at IS NOT NULL AND k.expires_at <= now()) OR k.plan_tier = 'deleted' THEN
    RAISE EXCEPTION USING ERRCODE = '28000', MESSAGE = 'spool.enqueue: the API key is not valid (unknown, revoked or expired)',
      HINT = 'Pass an active API key of the organization (sk_…), as the API takes it.';
  END IF;
  actor := 'api_key:' || k.id;
  IF k.role NOT IN ('admin', 'producer') THEN
    RAISE EXCEPTION USING ERRCODE = '42501', MESSAGE = format('spool.enqueue: a %s key may not enqueue', k.role),
      HINT = 'Use an admin or producer key.';
  END IF;

  IF queue_name IS NULL OR queue_name !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' OR char_length(queue_name) > (lim->>'queueNameMax')::int THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('spool.enqueue: queue_name %L is not valid: 1..%s letters, digits, _ . - (not starting with . or -)', queue_name, lim->>'queueNameMax');
  END IF;
  IF NOT (coalesce(cardinality(k.queues), 0) = 0 OR '*' = ANY (k.queues) OR EXISTS (
            SELECT 1 FROM unnest(k.queues) p
            WHERE p = queue_name OR (right(p, 1) = '*' AND starts_with(queue_name, left(p, -1))))) THEN
    RAISE EXCEPTION USING ERRCODE = '42501', MESSAGE = format('spool.enqueue: this API key may not use queue %L', queue_name),
      HINT = 'Use a key whose queues include it.';
  END IF;

  -- Options: the enqueue body's fields (docs/jobs-api.md), snake_case; anything else is refused, not ignored.
  IF jsonb_typeof(opt) <> 'object' THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'spool.enqueue: options must be a JSON object';
  END IF;
  SELECT string_agg(key, ', ' ORDER BY key) INTO bad FROM jsonb_object_keys(opt) AS key
  WHERE key NOT IN ('priority', 'max_retries', 'timeout_seconds', 'scheduled_at', 'expires_at', 'idempotency_key', 'tags',
                    'concurrency_key', 'fairness_key', 'job_key', 'traceparent', 'tracestate');
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('spool.enqueue: unknown option(s) %s', bad),
      HINT = 'Options are priority, max_retries, timeout_seconds, scheduled_at, expires_at, idempotency_key, tags, concurrency_key, fairness_key, job_key, traceparent, tracestate; completion_webhook needs the API (its target is checked over the network).';
  END IF;
  SELECT string_agg(format('%s must be an integer in %s..%s', f, lo, hi), '; ') INTO bad
  FROM (VALUES ('priority', (lim->>'priorityMin')::int, (lim->>'priorityMax')::int),
               ('max_retries', (lim->>'maxRetriesMin')::int, (lim->>'maxRetriesMax')::int),
               ('timeout_seconds', (lim->>'timeoutSecondsMin')::int, (lim->>'timeoutSecondsMax')::int)) AS r(f, lo, hi)
  WHERE opt ? f AND jsonb_typeof(opt->f) <> 'null'
    AND (jsonb_typeof(opt->f) <> 'number' OR (opt->>f)::numeric <> trunc((opt->>f)::numeric)
         OR (opt->>f)::numeric < lo OR (opt->>f)::numeric > hi);
  IF bad IS NULL THEN
    SELECT string_agg(format('%s must be a string of 1..%s characters', f, hi), '; ') INTO bad
    FROM (VALUES ('idempotency_key', (lim->>'idempotencyKeyMax')::int), ('concurrency_key', (lim->>'concurrencyKeyMax')::int),
                 ('fairness_key', (lim->>'concurrencyKeyMax')::int), ('traceparent', 55), ('tracestate', 512),
                 ('scheduled_at', 64), ('expires_at', 64)) AS r(f, hi)
    WHERE opt ? f AND jsonb_typeof(opt->f) <> 'null'
      AND (jsonb_typeof(opt->f) <> 'string' OR char_length(opt->>f) NOT BETWEEN 1 AND hi);
  END IF;
  IF bad IS NULL THEN
    SELECT string_agg(format('%s must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-01T12:00:00Z', f), '; ') INTO bad
    FROM unnest(ARRAY['scheduled_at', 'expires_at']) f
    WHERE jsonb_typeof(opt->f) = 'string'
      AND opt->>f !~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}(:?\d{2})?)$';
  END IF;
  IF bad IS NULL AND opt ? 'tags' AND jsonb_typeof(opt->'tags') NOT IN ('object', 'null') THEN bad := 'tags must be an object'; END IF;
  IF bad IS NULL AND opt ? 'tags' AND octet_length((opt->'tags')::text) > (lim->>'tagsBytesMax')::int THEN
    bad := format('tags exceed %s bytes', lim->>'tagsBytesMax');
  END IF;
  IF bad IS NULL AND opt ? 'traceparent' AND jsonb_typeof(opt->'traceparent') = 'string'
     AND (opt->>'traceparent' !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR opt->>'traceparent' ~ '^ff-'
          OR opt->>'traceparent' ~ '^..-0{32}-' OR opt->>'traceparent' ~ '-0{16}-..$') THEN
    bad := 'traceparent must be a W3C traceparent (version-traceid-parentid-flags, lowercase hex, ids not all zeros)';
  END IF;
  IF bad IS NULL AND opt ? 'tracestate' AND jsonb_typeof(opt->'tracestate') = 'string' AND NOT (opt ? 'traceparent') THEN
    bad := 'tracestate needs a traceparent';
  END IF;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'spool.enqueue: ' || bad;
  END IF;
  BEGIN
    PERFORM (opt->>'scheduled_at')::timestamptz, (opt->>'expires_at')::timestamptz;
  EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_text_representation THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'spool.enqueue: scheduled_at and expires_at must be ISO 8601 timestamps with a time zone';
  END;
  IF (opt->>'expires_at')::timestamptz <= coalesce((opt->>'scheduled_at')::timestamptz, now()) THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'spool.enqueue: expires_at must be later than scheduled_at (or now)';
  END IF;
  IF octet_length(payload_text) > (lim->>'payloadBytesMax')::int THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('spool.enqueue: payload is %s bytes; the limit is %s', octet_length(payload_text), lim->>'payloadBytesMax');
  END IF;

  -- job_key: the rules of checkJobKey (routes/jobs.ts).
  jk := CASE WHEN jsonb_typeof(opt->'job_key') = 'null' THEN NULL ELSE opt->'job_key' END;
  IF jk IS NOT NULL THEN
    IF jsonb_typeof(jk) <> 'object' OR jsonb_typeof(jk->'key') IS DISTINCT FROM 'string'
       OR char_length(jk->>'key') NOT BETWEEN 1 AND (lim->>'jobKeyMax')::int
       OR NOT (jk->>'mode' = ANY (ARRAY['dedupe', 'debounce', 'throttle', 'replace']))
       OR EXISTS (SELECT 1 FROM jsonb_object_keys(jk) f WHERE f NOT IN ('key', 'mode', 'window_secs', 'max_wait_secs'))
       OR EXISTS (SELECT 1 FROM unnest(ARRAY['window_secs', 'max_wait_secs']) f
                  WHERE jk ? f AND (jsonb_typeof(jk->f) <> 'number' OR (jk->>f)::numeric <> trunc((jk->>f)::numeric)
                                    OR (jk->>f)::numeric NOT BETWEEN 1 AND (lim->>'jobKeyWindowSecsMax')::int)) THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('spool.enqueue: job_key must be {key: 1..%s characters, mode: dedupe|debounce|throttle|replace, window_secs?, max_wait_secs?: 1..%s}', lim->>'jobKeyMax', lim->>'jobKeyWindowSecsMax');
    END IF;
    key_mode := jk->>'mode';
    key_window := (jk->>'window_secs')::int;
    key_max_wait := (jk->>'max_wait_secs')::int;
    bad := CASE
      WHEN key_mode IN ('debounce', 'throttle') AND key_window IS NULL THEN format('job_key.window_secs is required with mode %s', key_mode)
      WHEN key_mode NOT IN ('debounce', 'throttle') AND key_window IS NOT NULL THEN format('job_key.window_secs applies to modes debounce and throttle, not %s', key_mode)
      WHEN key_max_wait IS NOT NULL AND key_mode <> 'debounce' THEN 'job_key.max_wait_secs applies to mode debounce only'
      WHEN key_max_wait < key_window THEN format('job_key.max_wait_secs must be at least window_secs (%s)', key_window)
      WHEN key_mode = 'debounce' AND opt ? 'scheduled_at' AND jsonb_typeof(opt->'scheduled_at') <> 'null'
        THEN 'scheduled_at cannot be combined with job_key mode debounce, which sets the run time'
    END;
    IF bad IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'spool.enqueue: ' || bad;
    END IF;
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
      RAISE EXCEPTION USING ERRCODE = '25001', MESSAGE = 'spool.enqueue: a job_key needs READ COMMITTED or SERIALIZABLE isolation',
        HINT = 'Under REPEATABLE READ the key''s check cannot see enqueues that committed after the transaction began.';
    END IF;
  END IF;

  -- Plan limits (http/plan-limits.ts): the tier's, with the organization's custom_limits over them.
  SELECT l.limits || coalesce((
           SELECT jsonb_object_agg(c.key, c.value) FROM jsonb_each(CASE WHEN jsonb_typeof(k.custom_limits) = 'object' THEN k.custom_limits ELSE '{}'::jsonb END) c
           WHERE l.limits ? c.key AND c.key NOT IN ('tier', 'display_name')
             AND (jsonb_typeof(c.value) = 'null' OR (jsonb_typeof(c.value) = 'number' AND c.value::text::numeric >= 0 AND c.value::text::numeric = trunc(c.value::text::numeric)))),
         '{}'::jsonb)
    INTO plan
  FROM spool.plan_limits l
  WHERE l.tier = CASE WHEN EXISTS (SELECT 1 FROM spool.plan_limits WHERE tier = k.plan_tier) THEN k.plan_tier ELSE 'free' END;
  IF plan IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = 'spool.enqueue: no plan limits are recorded yet',
      HINT = 'Start the Spool server once against this database: it writes spool.plan_limits.';
  END IF;
  max_payload := (plan->>'max_payload_size_bytes')::int;
  max_active := (plan->>'max_active_jobs')::int;
  per_day := (plan->>'max_jobs_per_day')::int;
  IF max_payload IS NOT NULL AND octet_length(payload_text) > max_payload THEN
    RAISE EXCEPTION USING ERRCODE = '54000', MESSAGE = format('spool.enqueue: payload is %s bytes; the %s plan allows at most %s', octet_length(payload_text), plan->>'display_name', max_payload);
  END IF;
  IF max_active IS NOT NULL OR per_day IS NOT NULL THEN
    -- Held until the caller's transaction ends, as the API holds it until its insert commits.
    PERFORM spool.op_organization_limit_lock(k.organization_id, 'jobs');
  END IF;

  IF jk IS NOT NULL THEN
    PERFORM spool.op_job_key_lock(ARRAY[k.organization_id], ARRAY[queue_name], ARRAY[jk->>'key']);
    SELECT * INTO standing FROM spool.op_job_key_resolve(
      ARRAY[0], ARRAY[k.organization_id], ARRAY[queue_name], ARRAY[jk->>'key'], ARRAY[key_mode], ARRAY[key_window], ARRAY[key_max_wait],
      ARRAY[opt->>'idempotency_key'], ARRAY[payload_text], ARRAY[(opt->>'priority')::int], ARRAY[(opt->>'max_retries')::int],
      ARRAY[(opt->>'timeout_seconds')::int], ARRAY[(opt->>'scheduled_at')::timestamptz], ARRAY[(opt->>'expires_at')::timestamptz],
      ARRAY[CASE WHEN jsonb_typeof(opt->'tags') = 'object' THEN (opt->'tags')::text END], ARRAY[NULL::text],
      ARRAY[opt->>'concurrency_key'], ARRAY[opt->>'fairness_key'], ARRAY[opt->>'traceparent'], ARRAY[opt->>'tracestate'],
      (lim->>'maxRetriesDefault')::int, (lim->>'timeoutSecondsDefault')::int, ARRAY[actor]);
    IF standing.outcome <> 'created' THEN
      RETURN jsonb_build_object('id', standing.job_id, 'created', false, 'status', standing.status, 'key_outcome', standing.outcome);
    END IF;
    run_at := standing.run_at;
    after_job := standing.after_job_id;
  END IF;

  IF max_active IS NOT NULL AND (SELECT a.active FROM spool.op_organization_active_jobs(k.organization_id, max_active) a) + 1 > max_active THEN
    RAISE EXCEPTION USING ERRCODE = '54000', MESSAGE = format('spool.enqueue: active job limit reached: %s active jobs allowed on the %s plan', max_active, plan->>'display_name');
  END IF;

  SELECT * INTO ins FROM spool.op_job_insert_many(
    ARRAY[spool.uuidv7()], ARRAY[k.organization_id], ARRAY[queue_name], ARRAY[payload_text],
    ARRAY[coalesce((opt->>'priority')::int, 0)], ARRAY[(opt->>'max_retries')::int], ARRAY[(opt->>'timeout_seconds')::int],
    ARRAY[coalesce(run_at, (opt->>'scheduled_at')::timestamptz)], ARRAY[(opt->>'expires_at')::timestamptz],
    ARRAY[opt->>'idempotency_key'], ARRAY[CASE WHEN jsonb_typeof(opt->'tags') = 'object' THEN (opt->'tags')::text END],
    ARRAY[NULL::uuid], ARRAY[NULL::text], (lim->>'maxRetriesDefault')::int, (lim->>'timeoutSecondsDefault')::int,
    ARRAY[opt->>'traceparent'], ARRAY[opt->>'tracestate'], ARRAY[opt->>'concurrency_key'], ARRAY[opt->>'fairness_key'],
    ARRAY[jk->>'key'], ARRAY[key_mode]);
  IF ins.created AND per_day IS NOT NULL AND NOT EXISTS (SELECT 1 FROM spool.op_organization_quota_reserve(k.organization_id, 1, per_day)) THEN
    RAISE EXCEPTION USING ERRCODE = '54000', MESSAGE = format('spool.enqueue: daily job limit reached: %s jobs a day on the %s plan', per_day, plan->>'display_name');
  END IF;
  -- replace while the key's job runs: the new job waits for it to end, however it ends (as job-enqueue.ts does).
  IF ins.created AND after_job IS NOT NULL THEN
    PERFORM spool.op_job_dependencies_insert(k.organization_id, ins.id, ARRAY[after_job], 'completion', NULL, 'continue');
    PERFORM spool.op_job_dependencies_recount(k.organization_id, ARRAY[ins.id]);
  END IF;
  outcome := CASE WHEN jk IS NULL THEN NULL WHEN ins.created THEN 'created' ELSE 'deduplicated' END;
  RETURN jsonb_strip_nulls(jsonb_build_object('id', ins.id, 'created', ins.created, 'status', ins.status, 'key_outcome', outcome));
END
$fn$;
