-- One replay of an organization, if the caller's queues ($3: LIKE
-- patterns, NULL = all) reach it (spool.dlq_replay_within, migration 036).
SELECT r.*, now() AS read_at
FROM spool.dlq_replays r
WHERE r.organization_id = $1 AND r.id = $2
  AND spool.dlq_replay_within(r.queue_name, r.queue_scope, r.edit_queue_name, $3::text[]);
