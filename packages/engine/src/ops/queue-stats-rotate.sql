-- The ring partitions (migration 023) to empty before their turn: the one
-- the next UTC day's minutes will use and the one the next 10-day slice's
-- hours will use, each with the time its new rows start at. The caller
-- truncates a partition only when it still holds rows from before then (a
-- full turn of the ring ago), so running this often costs two probes.
WITH next AS (
  SELECT TIMESTAMPTZ '1970-01-01 00:00:00+00' + (floor(extract(epoch FROM now() - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 86400) + 1) * interval '1 day' AS day,
         TIMESTAMPTZ '1970-01-01 00:00:00+00' + (floor(extract(epoch FROM now() - TIMESTAMPTZ '1970-01-01 00:00:00+00') / 864000) + 1) * interval '10 days' AS slice
)
SELECT 'queue_stats_minute_' || spool.stats_minute_slot(day) AS partition, day AS starts FROM next
UNION ALL
SELECT 'queue_stats_hour_' || spool.stats_hour_slot(slice), slice FROM next;
