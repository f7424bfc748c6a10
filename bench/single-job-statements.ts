/**
 * What a statement that carries one job costs besides running
 * (`node --import tsx bench/single-job-statements.ts [rounds]`): on one
 * connection, each round claims one job of a queue of 3,000, completes it
 * and enqueues one, in one transaction, through the engine as the server
 * runs it (named statements, generic plans). Prints each call's round trip
 * (median, inside the transaction, so the commit is apart) beside its
 * statement's mean execution time from pg_stat_statements. The gap is what
 * the call costs besides executing: binding the cached plan, locking what
 * it names, starting and ending the executor over every node of the plan
 * (a one-time filter does not spare a node its start), the wire and the
 * engine's JavaScript. S4 and S9 claim and complete a job or a few at a
 * time, so there this is paid per job. Compare two versions of the SQL by
 * running this on each.
 */
import { createPool, jobClaim, jobCompleteMany, jobInsertMany, migrate, organizationCreate } from '@spool/engine';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';

const rounds = Number(process.argv[2] ?? 400);
const WARMUP = 50;
const scratch = await startScratchPostgres({
  prefix: 'spool-single-job-',
  embeddedOnly: true,
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

try {
  const db = createPool({ connectionString: await scratch.createDatabase('single_job'), max: 1, planCacheMode: 'force_generic_plan' });
  await migrate(db);
  await db.query('CREATE EXTENSION pg_stat_statements');
  const { organization } = await organizationCreate(db, { name: 'bench', slug: 'bench', planTier: 'unlimited', environment: 'development' });
  const organizationId = organization.id;
  for (let k = 0; k < 3; k++) await jobInsertMany(db, Array.from({ length: 1000 }, (_, i) => ({ organizationId, queueName: 'bench', payload: { i } })));
  await db.query('VACUUM ANALYZE');
  const client = await db.connect();
  const times = { claim: [] as number[], complete: [] as number[], enqueue: [] as number[], commit: [] as number[] };
  const timed = async <T>(into: number[], round: number, call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await call();
    if (round >= WARMUP) into.push(performance.now() - started);
    return value;
  };
  for (let round = 0; round < rounds + WARMUP; round++) {
    if (round === WARMUP) await client.query('SELECT pg_stat_statements_reset()');
    await client.query('BEGIN');
    const [job] = await timed(times.claim, round, () => jobClaim(client, { organizationId, queueName: 'bench', workerId: 'w', limit: 1, leaseSeconds: 60 }));
    if (!job) throw new Error('the queue ran dry');
    const [outcome] = await timed(times.complete, round, () => jobCompleteMany(client, organizationId, [{ id: job.id, workerId: 'w', leaseId: job.lease_id, result: null }]));
    if (!outcome?.ok) throw new Error('the completion was refused');
    await timed(times.enqueue, round, () => jobInsertMany(client, [{ organizationId, queueName: 'bench', payload: { round } }]));
    await timed(times.commit, round, () => client.query('COMMIT'));
  }
  const stats = await client.query<{ name: string; exec: number }>(`
    SELECT s.name, p.mean_exec_time AS exec
    FROM (VALUES ('claim', '%FOR UPDATE SKIP LOCKED%UPDATE spool.jobs_live j%'), ('complete', '%spool.job_fence(j, i.worker_id, i.lease_id)%'),
                 ('enqueue', '%INSERT INTO spool.jobs% AS j (id, organization_id%')) AS s(name, pattern)
    LEFT JOIN LATERAL (SELECT mean_exec_time FROM pg_stat_statements WHERE query LIKE s.pattern AND calls >= $1 ORDER BY calls DESC LIMIT 1) p ON true`, [rounds]);
  const exec = new Map(stats.rows.map((row) => [row.name, row.exec]));
  console.log(`${rounds} rounds of claim 1, complete 1, enqueue 1 in one transaction (ms per call: round trip median; execution mean)`);
  for (const [name, values] of Object.entries(times)) {
    const run = exec.get(name) ?? undefined;
    console.log(`  ${name.padEnd(9)} round trip ${median(values).toFixed(3)}${run === undefined ? '' : `  execution ${run.toFixed(3)}  besides ${(median(values) - run).toFixed(3)}`}`);
  }
  client.release();
  await db.end();
} finally {
  await scratch.stop();
}
