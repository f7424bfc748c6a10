import type pg from 'pg';

/**
 * Runs `load` in a transaction in which spool.jobs takes rows in any status
 * and any change of status: the job state machine's triggers (engine
 * migrations 022 and 046) are off for it, as for a restore of existing data,
 * and finished rows are moved to spool.jobs_done at its end. For
 * fixtures that need jobs in a state no operation can make quickly (a
 * million finished rows, a `failed` job, a row with chosen timestamps). The
 * CHECK constraints still apply. Other sessions never see the triggers off:
 * they are back on before the commit, and the ALTER TABLE lock keeps other
 * writers of spool.jobs waiting until then.
 */
export async function loadJobsAsIs<T>(db: pg.Pool, load: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('ALTER TABLE spool.jobs_live DISABLE TRIGGER jobs_status_start, DISABLE TRIGGER jobs_status_move, DISABLE TRIGGER jobs_status_finish');
    await client.query('ALTER TABLE spool.jobs_done DISABLE TRIGGER jobs_status_final');
    const value = await load(client);
    // A finished row loaded (or moved) without its phase goes where the
    // finishing statements put it (engine migrations 046 and 047), in the
    // partition of the day its window ends, counted from its completed_at.
    await client.query(`UPDATE spool.jobs SET phase = 'done', purge_on = spool.job_purge_on(organization_id, queue_name, status, coalesce(completed_at, now()))
                        WHERE phase = 'live' AND status IN ('completed', 'cancelled')`);
    await client.query('ALTER TABLE spool.jobs_live ENABLE TRIGGER jobs_status_start, ENABLE TRIGGER jobs_status_move, ENABLE TRIGGER jobs_status_finish');
    await client.query('ALTER TABLE spool.jobs_done ENABLE TRIGGER jobs_status_final');
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * `count` dead-lettered jobs of `queue` with their dead_letter_queue rows,
 * created a millisecond apart an hour ago (payload `{ n }`, last_error
 * `error(i)` or `boom <i>`); returns their ids oldest first.
 */
export async function loadDeadLetters(db: pg.Pool, organizationId: string, queue: string, count: number, options: { error?: (i: number) => string } = {}): Promise<string[]> {
  const errors = Array.from({ length: count }, (_, i) => options.error?.(i) ?? `boom ${i}`);
  return loadJobsAsIs(db, async (c) => {
    const result = await c.query<{ id: string }>(
      `WITH made AS (
         INSERT INTO spool.jobs (organization_id, queue_name, status, payload, retry_count, max_retries, last_error, created_at, completed_at)
         SELECT $1, $2, 'deadletter', jsonb_build_object('n', n), 3, 3, ($3::text[])[n], now() - interval '1 hour' + n * interval '1 millisecond', now()
         FROM generate_series(1, $4::int) AS n
         RETURNING id, organization_id, queue_name, payload, last_error, created_at
       ),
       listed AS (
         INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count)
         SELECT organization_id, id, queue_name, payload, last_error, 3 FROM made
       )
       SELECT id::text FROM made ORDER BY created_at`,
      [organizationId, queue, errors, count],
    );
    return result.rows.map((r) => r.id);
  });
}
