-- When the promoter should wake next: the earliest scheduled_at still waiting.
SELECT min(scheduled_at) AS next_at FROM spool.jobs WHERE status = 'scheduled';
