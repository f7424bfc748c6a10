-- Records that a key was used; callers throttle this to once a minute per key.
UPDATE spool.api_keys SET last_used = now() WHERE id = $1;
