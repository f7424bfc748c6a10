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
  /**
   * `plan_cache_mode` for every connection of the pool; undefined leaves the
   * server's own setting. See PLAN_CACHE_MODES.
   */
  planCacheMode?: PlanCacheMode;
}

/**
 * PostgreSQL's `plan_cache_mode`. In `auto` a prepared statement is planned
 * for its values five times, then kept on a generic plan only while that
 * plan's estimated cost stays under the average of those first custom plans.
 * The average is never refreshed, so once the statistics move (a queue that
 * was empty when the connection started, an ANALYZE during a drain) a
 * statement such as the claim is replanned on every call for the rest of the
 * connection's life: in a drain, up to half the claims were planned anew
 * (docs/performance.md, "Generic plans"). Spool's statements are written for generic plans
 * (organization_id leads every index; listing-index-plans.test.ts plans them
 * generic), so the server runs them that way by default.
 */
export const PLAN_CACHE_MODES = ['force_generic_plan', 'auto', 'force_custom_plan'] as const;
export type PlanCacheMode = (typeof PLAN_CACHE_MODES)[number];

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
  const mode = options.planCacheMode;
  if (mode !== undefined && !PLAN_CACHE_MODES.includes(mode)) throw new Error(`planCacheMode must be one of ${PLAN_CACHE_MODES.join(', ')} (got "${String(mode)}")`);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'spool',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    ...(options.preparedStatements === false ? { Client: UnnamedStatementClient } : {}),
    // Awaited before the new connection runs anything else; a failure ends it
    // and fails the query that asked for it.
    ...(mode === undefined ? {} : { onConnect: async (client: pg.ClientBase) => void (await client.query(`SET plan_cache_mode = ${mode}`)) }),
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

/**
 * Attempts of a statement run on the pool that fails with 40001. A job that
 * finishes moves from spool.jobs_live to spool.jobs_done (migration 046),
 * and a statement that meets the row mid-move (a cancel against a
 * completion, a heartbeat, an edit, a fence) fails with "tuple to be locked
 * was already moved to another partition due to concurrent update" instead
 * of re-checking its WHERE on the newest version. Run again it sees the
 * job finished. A claim meets it too: a job pending in its snapshot that
 * another claim took and its worker completed before this claim reached
 * it. A claim walks many rows, and under many claimers of one queue each
 * new snapshot can meet another such row, so the bound is generous and the
 * attempts are spread by a short random pause; the bound still keeps a
 * statement from looping on anything else that raises 40001.
 */
const MOVED_ROW_ATTEMPTS = 10;

/** Before attempt `attempt` (2, 3, …): up to 2 ms per attempt so far, at random. */
function pauseBeforeRetry(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * (attempt - 1)));
}

function isSerializationFailure(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '40001';
}

/**
 * Whether a statement that just failed ran in a transaction of its own: one
 * on the pool always does; on a client, the connection is idle again ('I')
 * unless the statement was part of an explicit transaction, which the
 * failure has aborted ('E') and which only its owner can run again.
 */
function ranAlone(db: Queryable): boolean {
  return db instanceof pg.Pool || db.getTransactionStatus() === 'I';
}

/**
 * Runs one statement. A statement that ran alone and failed with 40001 is
 * run again: it changed nothing, so that is what its caller would do.
 */
export async function run<R extends pg.QueryResultRow>(db: Queryable, statement: Statement, values: unknown[]): Promise<R[]> {
  const query = { name: statement.name, text: statement.text, values };
  for (let attempt = 1; ; attempt++) {
    try {
      return (await db.query<R>(query)).rows;
    } catch (err) {
      if (attempt >= MOVED_ROW_ATTEMPTS || !isSerializationFailure(err) || !ranAlone(db)) throw err;
    }
    await pauseBeforeRetry(attempt + 1);
  }
}

export interface TransactionOptions {
  /**
   * Runs the whole transaction again (at most MOVED_ROW_ATTEMPTS times in
   * all) when it fails with 40001, as `run` does for a single statement: for
   * a `fn` whose only effects are its statements, which the rollback undid.
   */
  retrySerializationFailure?: boolean;
}

/** Runs `fn` in a transaction on one pooled connection; rolls back on any throw. */
export async function transaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transactionOnce(db, fn);
    } catch (err) {
      if (!options.retrySerializationFailure || attempt >= MOVED_ROW_ATTEMPTS || !isSerializationFailure(err)) throw err;
    }
    await pauseBeforeRetry(attempt + 1);
  }
}

async function transactionOnce<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
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
