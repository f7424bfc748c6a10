import { LIMITS } from '@spool/protocol';
import type { Queryable } from './db.js';
import { sqlFile } from './db.js';

/**
 * Operations that SQL inside PostgreSQL calls too: spool.enqueue()
 * (migration 039, docs/transactional-enqueue.md) enqueues in the caller's
 * own transaction with the statements the server runs. Each statement stays
 * written once, in its ops/*.sql file: after the migrations, every start
 * installs it as a SQL function `spool.op_<name>` whose body is the file's
 * text (positional parameters $1…$n are a SQL function's arguments), and
 * `spool.limits()` answers LIMITS. The server itself runs the files as
 * prepared statements, not these functions.
 *
 * Functions are dropped and created again in the migration transaction, so
 * a signature change needs no migration; replicas of different versions
 * starting together leave the last one's, which is the newest in a rolling
 * upgrade.
 */
interface SqlFunction {
  file: string;
  args: string[];
  returns: string;
}

const FUNCTIONS: SqlFunction[] = [
  {
    file: 'job-insert-many.sql',
    args: ['uuid[]', 'uuid[]', 'text[]', 'text[]', 'int[]', 'int[]', 'int[]', 'timestamptz[]', 'timestamptz[]', 'text[]', 'text[]',
      'uuid[]', 'text[]', 'int', 'int', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]'],
    returns: 'TABLE(id uuid, organization_id uuid, idempotency_key text, status text, created boolean, notified boolean)',
  },
  { file: 'job-key-lock.sql', args: ['uuid[]', 'text[]', 'text[]'], returns: 'void' },
  {
    file: 'job-key-resolve.sql',
    args: ['int[]', 'uuid[]', 'text[]', 'text[]', 'text[]', 'int[]', 'int[]', 'text[]', 'text[]', 'int[]', 'int[]', 'int[]',
      'timestamptz[]', 'timestamptz[]', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'int', 'int', 'text[]'],
    returns: 'TABLE(ord int, outcome text, job_id uuid, status text, run_at timestamptz, after_job_id uuid, woken bigint)',
  },
  { file: 'job-dependencies-insert.sql', args: ['uuid', 'uuid', 'uuid[]', 'text', 'text', 'text'], returns: 'TABLE(depends_on_job_id uuid)' },
  { file: 'job-dependencies-recount.sql', args: ['uuid', 'uuid[]'], returns: 'TABLE(id uuid, dependencies_met boolean, was_met boolean, notified boolean)' },
  { file: 'organization-limit-lock.sql', args: ['uuid', 'text'], returns: 'void' },
  { file: 'organization-active-jobs.sql', args: ['uuid', 'int'], returns: 'TABLE(active bigint)' },
  { file: 'organization-quota-reserve.sql', args: ['uuid', 'int', 'int'], returns: 'TABLE(counter int)' },
];

const functionName = (file: string) => `spool.op_${file.replace(/\.sql$/, '').replace(/-/g, '_')}`;

/** Drops and creates the functions (inside the caller's transaction: migrate()). */
export async function installSqlFunctions(db: Queryable): Promise<void> {
  for (const fn of FUNCTIONS) {
    const name = functionName(fn.file);
    const { text } = sqlFile(new URL('./ops/', import.meta.url).href, fn.file);
    // The body is quoted with a tag no statement contains.
    if (text.includes('$op$')) throw new Error(`${fn.file} contains $op$`);
    await db.query(`DROP FUNCTION IF EXISTS ${name}(${fn.args.join(', ')})`);
    await db.query(`CREATE FUNCTION ${name}(${fn.args.join(', ')}) RETURNS ${fn.returns === 'void' ? 'void' : fn.returns} LANGUAGE sql VOLATILE AS $op$\n${text.trim().replace(/;\s*$/, '')}\n$op$`);
  }
  await db.query(`CREATE OR REPLACE FUNCTION spool.limits() RETURNS jsonb LANGUAGE sql IMMUTABLE AS $op$ SELECT '${JSON.stringify(LIMITS).replace(/'/g, "''")}'::jsonb $op$`);
}
