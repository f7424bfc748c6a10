-- An organization's replays that the caller's queues ($2: LIKE patterns,
-- NULL = all) reach, newest first, optionally of one status ($3).
SELECT r.*, now() AS read_at
FROM spool.dlq_replays r
WHERE r.organization_id = $1
  AND ($3::text IS NULL OR r.status = $3::text)
  AND spool.dlq_replay_within(r.queue_name, r.queue_scope, r.edit_queue_name, $2::text[])
ORDER BY r.created_at DESC, r.id DESC
LIMIT $4 OFFSET $5;
