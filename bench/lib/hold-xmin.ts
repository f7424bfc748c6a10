import pg from 'pg';

/**
 * S7's and S9's fixture: a session whose open transaction (an xid and a
 * snapshot) keeps vacuum from removing any row version that dies after now.
 * `table` is any table of the system's database, read once so that the
 * snapshot is taken. `end` rolls it back and closes the session.
 */
export async function holdXmin(connectionString: string, table = 'spool.organizations'): Promise<{ end(): Promise<void> }> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query(`SELECT txid_current(), count(*) FROM ${table}`);
  return {
    async end() {
      await client.query('ROLLBACK').catch(() => {});
      await client.end();
    },
  };
}
