-- What the webhook dispatcher could turn log rows into, and where each log
-- ends, read in one snapshot. With no enabled webhook, no row of the event
-- log can become a delivery; with none and no job that has a
-- completion_webhook, no row of the job history can either, and neither can
-- a row still uncommitted below the newest visible one (it completes a job
-- that exists now, see webhookDispatch). The dispatcher then moves its
-- cursors to the ends instead of reading every row.
SELECT EXISTS (SELECT 1 FROM spool.outgoing_webhooks WHERE enabled) AS subscribed,
       EXISTS (SELECT 1 FROM spool.jobs WHERE completion_webhook IS NOT NULL) AS completion,
       coalesce((SELECT max(id) FROM spool.job_history), 0) AS history_end,
       coalesce((SELECT max(id) FROM spool.events), 0) AS events_end;
