/**
 * `npm test`: prepares PostgreSQL once, then runs every test file in
 * parallel with node's test runner.
 *  - With DATABASE_URL: uses that server (it needs CREATEDB rights).
 *  - Without: starts an embedded PostgreSQL in a temporary directory.
 * It migrates a template database that each test file clones (see
 * test-support/db.ts) and drops everything it created at the end.
 * Arguments are test file filters: `npm test -- claim` runs files whose path contains "claim".
 * Files named `*.serial.test.ts` run after the others, one at a time.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createPool, migrate } from '@spool/engine';
import { dashboardAssets } from '@spool/server';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';

const root = new URL('..', import.meta.url).pathname;

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTests(path));
    else if (entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

async function main(): Promise<number> {
  const filters = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const files = findTests(join(root, 'packages'))
    .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
    .sort();
  if (files.length === 0) {
    console.error('no test files matched');
    return 1;
  }

  // The tests that start the server as `npm start` does run the build in dist/: make it this source's.
  const built = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) {
    console.error('[test] scripts/build.mjs failed');
    return 1;
  }

  // Build the dashboard once here if it is missing, rather than in every test process that starts a server.
  const dashboard = await dashboardAssets().ensure({ info: (m) => console.error(`[test] ${m}`), error: (m) => console.error(`[test] ${m}`) });
  if (dashboard.kind === 'failed') console.error('[test] the dashboard could not be built; its tests will fail');

  const started = Date.now();
  const scratch = await startScratchPostgres({
    prefix: 'spool-test-',
    // Durability is not under test here; these make database setup fast.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '400' },
    log: (m) => console.error(`[embedded-postgres] ${m}`),
    warn: (m) => console.error(`[test] ${m}`),
  });
  const { adminUrl, admin } = scratch;
  if (scratch.embedded) console.error(`[test] embedded PostgreSQL ready on port ${new URL(adminUrl).port} in ${Date.now() - started} ms`);
  else console.error(`[test] using DATABASE_URL (${new URL(adminUrl).host})`);

  const template = `spool_t${randomBytes(3).toString('hex')}`;
  let code = 1;
  try {
    const version = await admin.query<{ server_version: string }>('SHOW server_version');
    console.error(`[test] PostgreSQL ${version.rows[0]!.server_version}; template database ${template}`);
    const pool = createPool({ connectionString: await scratch.createDatabase(template), max: 2 });
    await migrate(pool);
    await pool.end();

    const concurrency = process.env.SPOOL_TEST_CONCURRENCY ?? '4';
    const env = { ...process.env, SPOOL_TEST_ADMIN_URL: adminUrl, SPOOL_TEST_TEMPLATE: template };
    const runFiles = (batch: string[], filesAtOnce: string) => new Promise<number>((resolve) => {
      if (batch.length === 0) return resolve(0);
      const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${filesAtOnce}`, ...batch], { stdio: 'inherit', cwd: root, env });
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
    });
    // `*.serial.test.ts` files measure timing (cron precision, leader failover
    // across processes): they run afterwards, one at a time, so that they
    // measure Spool and not four test files sharing two cores.
    const parallel = await runFiles(files.filter((f) => !f.endsWith('.serial.test.ts')), concurrency);
    const serial = await runFiles(files.filter((f) => f.endsWith('.serial.test.ts')), '1');
    code = parallel || serial;
  } finally {
    // Clones of the template that a failed test file left behind (stop() drops
    // the template itself); an embedded cluster goes whole with its directory.
    if (!scratch.embedded && process.env.SPOOL_KEEP_TEST_DB !== '1') {
      const leftovers = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1 AND datname <> $2', [`${template}%`, template])
        .catch((err) => (console.error(`[test] could not list leftover databases: ${err}`), { rows: [] }));
      for (const { datname } of leftovers.rows) await scratch.dropDatabase(datname);
    }
    await scratch.stop();
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
