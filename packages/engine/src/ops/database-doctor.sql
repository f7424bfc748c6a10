-- The queue doctor's reading of PostgreSQL: what holds back vacuum in this
-- database (the oldest transaction of another session that has a snapshot
-- or an xid, prepared transactions, replication slots), sessions idle in a
-- transaction, and dead tuples / last autovacuum of Spool's hot tables ($1).
-- Catalog views only: cost independent of the number of jobs.
SELECT
  (SELECT json_build_object(
            'pid', a.pid,
            'application_name', a.application_name,
            'state', a.state,
            'client_addr', host(a.client_addr),
            'xact_start', a.xact_start,
            'query_start', a.query_start,
            'age_seconds', extract(epoch FROM now() - a.xact_start)::float8)
     FROM pg_stat_activity a
     WHERE a.datname = current_database()
       AND a.pid <> pg_backend_pid()
       AND a.backend_type = 'client backend'
       AND a.xact_start IS NOT NULL
       AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
     ORDER BY a.xact_start
     LIMIT 1) AS oldest_transaction,
  (SELECT count(*)::int
     FROM pg_stat_activity a
     WHERE a.datname = current_database() AND a.state IN ('idle in transaction', 'idle in transaction (aborted)')) AS idle_in_transaction,
  (SELECT max(extract(epoch FROM now() - a.state_change))::float8
     FROM pg_stat_activity a
     WHERE a.datname = current_database() AND a.state IN ('idle in transaction', 'idle in transaction (aborted)')) AS idle_in_transaction_longest_seconds,
  (SELECT extract(epoch FROM now() - min(p.prepared))::float8
     FROM pg_prepared_xacts p
     WHERE p.database = current_database()) AS oldest_prepared_seconds,
  (SELECT coalesce(json_agg(json_build_object('slot_name', s.slot_name, 'active', s.active, 'xmin_age', greatest(age(s.xmin), age(s.catalog_xmin)))), '[]'::json)
     FROM pg_replication_slots s
     WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL) AS slots,
  (SELECT coalesce(json_agg(json_build_object(
            'table', t.relname,
            'live_tuples', t.n_live_tup,
            'dead_tuples', t.n_dead_tup,
            'last_autovacuum', t.last_autovacuum,
            'last_vacuum', t.last_vacuum) ORDER BY t.relname), '[]'::json)
     -- jobs_done is read as the sum of its day partitions (migration 047).
     FROM (SELECT CASE WHEN s.relname ~ '^jobs_done_([0-9]{8}|default)$' THEN 'jobs_done' ELSE s.relname END AS relname,
                  sum(s.n_live_tup)::bigint AS n_live_tup, sum(s.n_dead_tup)::bigint AS n_dead_tup,
                  max(s.last_autovacuum) AS last_autovacuum, max(s.last_vacuum) AS last_vacuum
           FROM pg_stat_user_tables s
           WHERE s.schemaname = 'spool'
           GROUP BY 1) t
     WHERE t.relname = ANY ($1::text[])) AS tables,
  now() AS at;
