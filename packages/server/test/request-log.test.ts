import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const entries: { level: number; msg: string; statusCode?: number; req?: { url?: string } }[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of chunk.toString().split('\n')) if (line) entries.push(JSON.parse(line));
    done();
  },
});
const WARN = 40;
const ERROR = 50;

let server: TestServer;
before(async () => {
  // Every request takes over a millisecond: each one is "slow" here.
  server = await startTestServer('requestlog', { logSlowRequestMs: 1 }, { logger: pino({ level: 'info' }, sink) });
});
after(async () => server.close());

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
const about = (path: string) => entries.filter((entry) => entry.req?.url?.startsWith(path));

describe('request log', () => {
  it('at info: nothing for a fast request, whatever its status', async () => {
    const quiet = await startTestServer('requestlogquiet', {}, { logger: pino({ level: 'info' }, sink) });
    try {
      await quiet.request('GET', '/api/v1/jobs');
      await quiet.request('GET', '/api/v1/jobs/nope');
      await quiet.request('GET', '/health/live');
      await settle();
      const lines = entries.filter((entry) => entry.req !== undefined && entry.level < WARN);
      assert.deepEqual(lines, [], 'requests are logged at debug only');
    } finally {
      await quiet.close();
    }
  });

  it('a slow request is one warn line; a long poll is not slow', async () => {
    await server.request('GET', '/api/v1/jobs?limit=3');
    await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'empty', worker_id: 'w', wait_ms: 200 } });
    await settle();
    const slow = about('/api/v1/jobs?limit=3');
    assert.equal(slow.length, 1, JSON.stringify(slow));
    assert.equal(slow[0]!.level, WARN);
    assert.equal(slow[0]!.msg, 'slow request');
    assert.equal(slow[0]!.statusCode, 200);
    assert.deepEqual(about('/api/v1/jobs/claim').filter((entry) => entry.level >= WARN), []);
  });

  it('a 5xx is an error line', async () => {
    // The database refuses this server's connections: readiness answers 503.
    const name = pg.escapeIdentifier(server.database.name);
    const admin = new pg.Client({ connectionString: process.env.SPOOL_TEST_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [server.database.name]);
      const ready = await server.request('GET', '/health/ready');
      assert.equal(ready.status, 503);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    await settle();
    const failed = about('/health/ready');
    assert.equal(failed.length, 1, JSON.stringify(failed));
    assert.equal(failed[0]!.level, ERROR);
    assert.equal(failed[0]!.statusCode, 503);
  });
});
