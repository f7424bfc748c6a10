import type pg from 'pg';

/**
 * Runs `load` in a transaction in which spool.jobs takes rows in any status
 * and any change of status: the job state machine's triggers (engine
 * migration 022) are off for it, as for a restore of existing data. For
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
    await client.query('ALTER TABLE spool.jobs DISABLE TRIGGER jobs_status_start, DISABLE TRIGGER jobs_status_move');
    const value = await load(client);
    await client.query('ALTER TABLE spool.jobs ENABLE TRIGGER jobs_status_start, ENABLE TRIGGER jobs_status_move');
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
