-- Counts one request against a budget's fixed window ($2 ms long, starting
-- with the first request after the previous window ended) and returns the
-- count so far and the ms left in the window. The row lock of ON CONFLICT
-- serializes replicas counting the same budget, and the database's clock
-- decides the windows, so replicas with skewed clocks still agree.
INSERT INTO spool.rate_limit_counters AS c (bucket, window_end, hits)
VALUES ($1, now() + make_interval(secs => $2::float8 / 1000), 1)
ON CONFLICT (bucket) DO UPDATE
SET hits       = CASE WHEN c.window_end <= now() THEN 1 ELSE c.hits + 1 END,
    window_end = CASE WHEN c.window_end <= now() THEN EXCLUDED.window_end ELSE c.window_end END
RETURNING hits, greatest(0, ceil(extract(epoch FROM window_end - now()) * 1000))::integer AS ttl_ms;
