import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { createPool, listMigrations, migrate, type MigrateResult } from '@spool/engine';

const root = new URL('../../../', import.meta.url).pathname;
const created: string[] = [];

function adminUrl(): string {
  const url = process.env.SPOOL_TEST_ADMIN_URL;
  if (!url) throw new Error('SPOOL_TEST_ADMIN_URL is not set: run the tests with `npm test`');
  return url;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A brand-new database with no schema at all (CREATE DATABASE from the
 * default template, not the migrated test template). Its name starts with
 * the test template's, so `npm test` drops it even if this file crashes.
 */
async function emptyDatabase(label: string): Promise<string> {
  const name = `${process.env.SPOOL_TEST_TEMPLATE ?? 'spool_t'}_${label}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  created.push(name);
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

after(async () => {
  await admin(async (c) => {
    for (const name of created) await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  });
});

async function recordedVersions(url: string): Promise<{ version: number; n: number }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ version: number; n: number }>(
      'SELECT version, count(*)::int AS n FROM spool.schema_migrations GROUP BY version ORDER BY version');
    return result.rows;
  } finally {
    await client.end();
  }
}

const expectedVersions = () => listMigrations().map((m) => ({ version: m.version, n: 1 }));

/**
 * Migrates `url` from a separate Node process. The child connects, says
 * "ready", and waits for a line on stdin before migrating, so the parent can
 * start several at the same instant.
 */
function migrateInChild(url: string): { ready: Promise<void>; go(): void; done: Promise<MigrateResult> } {
  const code = `
    import { createPool, migrate } from '@spool/engine';
    const pool = createPool({ connectionString: process.env.SPOOL_MIGRATE_URL, max: 2 });
    await pool.query('SELECT 1');
    process.stdout.write('ready\\n');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    const result = await migrate(pool);
    process.stdout.write(JSON.stringify(result) + '\\n');
    await pool.end();
    process.stdin.destroy();
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    env: { ...process.env, SPOOL_MIGRATE_URL: url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('ready\n')) onReady();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<MigrateResult>((resolve, reject) => {
    child.on('exit', (exitCode) => {
      if (exitCode !== 0) return reject(new Error(`migrating child exited with ${exitCode}: ${stderr}`));
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) return reject(new Error(`migrating child printed no result: ${stdout} ${stderr}`));
      resolve(JSON.parse(line) as MigrateResult);
    });
  });
  // A child that dies before "ready" must fail the test, not hang it.
  done.catch(() => onReady());
  return { ready, go: () => child.stdin.write('go\n'), done };
}

describe('migrate', () => {
  it('is idempotent: a second run on a fresh database applies nothing', async () => {
    const url = await emptyDatabase('idem');
    const pool = createPool({ connectionString: url, max: 2 });
    try {
      const first = await migrate(pool);
      assert.deepEqual(first.applied, listMigrations().map((m) => m.name));
      const second = await migrate(pool);
      assert.deepEqual(second, { applied: [], current: first.current });
    } finally {
      await pool.end();
    }
    assert.deepEqual(await recordedVersions(url), expectedVersions());
  });

  it('lets two processes migrate one empty database at once: both succeed, each version recorded once', async () => {
    const url = await emptyDatabase('procs');
    const children = [migrateInChild(url), migrateInChild(url)];
    await Promise.all(children.map((c) => c.ready));
    for (const child of children) child.go();
    const results = await Promise.all(children.map((c) => c.done));
    const names = listMigrations().map((m) => m.name);
    assert.deepEqual(results.map((r) => r.applied).sort((a, b) => b.length - a.length), [names, []], 'one applied everything, the other nothing');
    assert.equal(results[0]!.current, results[1]!.current);
    assert.deepEqual(await recordedVersions(url), expectedVersions());
  });

  it('lets two pools in one process race on an empty database', async () => {
    const url = await emptyDatabase('pools');
    const pools = [createPool({ connectionString: url, max: 2 }), createPool({ connectionString: url, max: 2 })];
    try {
      await Promise.all(pools.map((p) => p.query('SELECT 1')));
      const results = await Promise.all(pools.map((p) => migrate(p)));
      assert.equal(results.filter((r) => r.applied.length > 0).length, 1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    assert.deepEqual(await recordedVersions(url), expectedVersions());
  });
});
