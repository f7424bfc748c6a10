import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

// Timestamps are handed out as Date objects and bigint counts as numbers:
// counts in this schema stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient | pg.Client;

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /**
   * Run `Statement`s as named prepared statements (default). False sends
   * them unnamed, parsed on every call: needed behind a transaction-mode
   * pooler that does not track prepared statements, where the next
   * transaction may land on a server connection that never saw the PARSE.
   */
  preparedStatements?: boolean;
}

/**
 * A client that drops the statement name from queries given as config
 * objects, so that every query is parsed in the same round trip that runs
 * it. Queries given as Submittables (cursors, streams) pass through.
 */
class UnnamedStatementClient extends pg.Client {
  // pg's query() has many overloads; this forwards all of them.
  override query(...args: any[]): any {
    const [config] = args;
    if (config !== null && typeof config === 'object' && typeof config.name === 'string' && typeof config.submit !== 'function') {
      const { name: _name, ...unnamed } = config as pg.QueryConfig;
      args[0] = unnamed;
    }
    return (super.query as (...a: any[]) => any)(...args);
  }
}

/** A pool whose idle-connection errors are logged, not thrown (they would crash the process). */
export function createPool(options: PoolOptions, onError: (err: Error) => void = () => {}): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'spool',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    ...(options.preparedStatements === false ? { Client: UnnamedStatementClient } : {}),
  });
  pool.on('error', onError);
  return pool;
}

export interface Statement {
  /** Named prepared statement: parsed and planned once per connection. */
  name: string;
  text: string;
}

/**
 * Loads an operation's SQL from the `.sql` file beside it. The statement name
 * is the file name, so `pg_stat_statements` and logs point straight at it.
 */
export function sqlFile(moduleUrl: string, file: string): Statement {
  const path = fileURLToPath(new URL(file, moduleUrl));
  return { name: `spool_${basename(file, '.sql').replace(/-/g, '_')}`, text: readFileSync(path, 'utf8') };
}

export async function run<R extends pg.QueryResultRow>(db: Queryable, statement: Statement, values: unknown[]): Promise<R[]> {
  const result = await db.query<R>({ name: statement.name, text: statement.text, values });
  return result.rows;
}

/** Runs `fn` in a transaction on one pooled connection; rolls back on any throw. */
export async function transaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  // A checked-out client has no listener of the pool's: a connection that
  // breaks between two statements (PostgreSQL restarting) would emit an
  // unheard 'error' and crash the process. The next statement fails anyway;
  // the connection is then discarded instead of going back to the pool.
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (err) {
    const rolledBack = await client.query('ROLLBACK').then(() => true, () => false);
    if (!rolledBack) broken ??= err instanceof Error ? err : new Error(String(err));
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
