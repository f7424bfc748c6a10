-- When the promoter should wake next: the earliest scheduled job or retry
-- backoff still waiting (each an index probe; least() ignores NULLs).
SELECT least(
  (SELECT min(scheduled_at) FROM spool.jobs WHERE status = 'scheduled'),
  (SELECT min(scheduled_at) FROM spool.jobs WHERE in_backoff)
) AS next_at;
