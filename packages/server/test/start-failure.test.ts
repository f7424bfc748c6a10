/**
 * A first start that fails once the database is ready (here: the HTTP port
 * is taken) must not leave credentials behind that nobody was shown: with an
 * external DATABASE_URL there is no data directory to keep the generated
 * operator token in, so the next start generates and shows one, and the
 * development key is shown by the start that can be reached.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { after, before, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig, startSpool } from '@spool/server';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let taken: Server;
before(async () => {
  t = await createTestDatabase('startfail');
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
});
after(async () => {
  taken.close();
  await t.drop();
});

it('a start on a taken port shows nothing and keeps nothing unshown; the next start shows the key and the operator token', async () => {
  const port = (taken.address() as AddressInfo).port;
  const config = { ...loadConfig({}), databaseUrl: t.url, host: '127.0.0.1', grpcPort: 0, logLevel: 'silent' };
  const logger = pino({ level: 'silent' });

  const failedAnnouncements: string[] = [];
  await assert.rejects(
    startSpool({ ...config, port }, { logger, announce: (message) => failedAnnouncements.push(message) }),
    new RegExp(`the HTTP port ${port} on 127\\.0\\.0\\.1 is taken .*set PORT`),
  );
  assert.deepEqual(failedAnnouncements, []);
  const organizations = await t.pool.query('SELECT 1 FROM spool.organizations');
  assert.equal(organizations.rowCount, 0, 'no development organization whose key was never shown');

  const announcements: string[] = [];
  const spool = await startSpool({ ...config, port: 0 }, { logger, announce: (message) => announcements.push(message) });
  try {
    const shown = announcements.join('\n');
    const key = /(sk_test_[A-Za-z0-9_-]{43})/.exec(shown)?.[1];
    assert.ok(key, shown);
    assert.equal((await fetch(`${spool.url}/api/v1/dashboard`, { headers: { authorization: `Bearer ${key}` } })).status, 200);
    const token = /Spool generated the operator token[^\n]*\n\n {2}(smt_\S+)/.exec(shown)?.[1];
    assert.ok(token, `the operator token is generated and shown by the start that runs:\n${shown}`);
    assert.equal((await fetch(`${spool.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  } finally {
    await spool.stop();
  }
});
