-- Gives a claimed attempt back without counting it (its destination is
-- paused by the circuit breaker) and makes it due again at $2.
UPDATE spool.webhook_deliveries
SET attempts = greatest(attempts - 1, 0), next_attempt_at = $2, updated_at = now()
WHERE id = $1 AND status = 'pending';
