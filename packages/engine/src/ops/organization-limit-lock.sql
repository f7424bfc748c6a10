-- Serializes plan-limit checks of one organization and resource ($2: jobs,
-- workers, api_keys, schedules, workflows, webhooks) until the end of the
-- transaction: the count that follows and the insert it admits cannot
-- interleave with another check of the same kind, so two creates at the
-- limit cannot both pass. Only plans with a limit take it.
SELECT pg_advisory_xact_lock(hashtextextended('spool.plan_limit:' || $2::text || ':' || $1::text, 0));
