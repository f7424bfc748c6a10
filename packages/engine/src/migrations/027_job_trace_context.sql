-- The W3C trace context a job was enqueued in (docs/observability.md,
-- Tracing): its workers' spans link to it. Nullable and without a default,
-- so adding them rewrites nothing and a job enqueued outside any trace
-- stores only two bits of its row's null bitmap. No CHECK: the server
-- validates both values strictly at the edge, and a constraint here would
-- scan the whole table while this migration holds its lock.
ALTER TABLE spool.jobs
  ADD COLUMN traceparent text,
  ADD COLUMN tracestate text;
