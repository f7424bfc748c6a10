/**
 * The fast variant of `npm run fuzz` (reliability/fuzz.ts): the same
 * generated requests against every route of the route table, on a fixed seed
 * (always the same sequence) and on a random one (printed, so a failure can
 * be replayed with `npm run fuzz -- --seed <seed>`).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { runGrpcFuzz } from '../../../reliability/fuzz/grpc.js';
import { formatReport, runFuzz, type FuzzServer } from '../../../reliability/fuzz/run.js';

const RUNS = 300;
const FIXED_SEED = 20261129;

let server: TestServer;
let target: FuzzServer;
const errorLogs: string[] = [];
const secrets = { adminKey: 'test-admin-key', githubSecret: randomBytes(8).toString('hex'), stripeSecret: randomBytes(8).toString('hex') };

before(async () => {
  const sink = new Writable({ write(chunk, _enc, done) { errorLogs.push(String(chunk).trim()); done(); } });
  server = await startTestServer('fuzz', {
    adminApiKey: secrets.adminKey,
    githubWebhookSecret: secrets.githubSecret,
    stripeWebhookSecret: secrets.stripeSecret,
    secretsKey: randomBytes(32),
    publicRateLimitPerMinute: 0,
  }, { logger: pino({ level: 'error' }, sink) });
  target = { url: server.url, routes: server.spool.routes, db: server.spool.db, apiKey: server.apiKey, organizationId: server.organizationId, ...secrets, errorLogs: () => errorLogs };
});
after(async () => server.close());

async function fuzz(seed: number): Promise<void> {
  const report = await runFuzz(target, { runs: RUNS, seed });
  const summary = formatReport(report);
  console.log(summary.split('\n').slice(0, 2).join('\n'));
  assert.equal(report.runs, RUNS);
  assert.deepEqual(report.distinct, [], summary);
  assert.deepEqual(report.inconsistencies, [], summary);
  assert.deepEqual(report.processErrors, [], summary);
  // The generator must reach past the front door, or "no 5xx" says little.
  const handled = Object.entries(report.statuses).filter(([s]) => /^2/.test(s)).reduce((n, [, c]) => n + c, 0);
  assert.ok(handled > RUNS / 5, `only ${handled} of ${RUNS} requests succeeded: ${summary}`);
}

describe('fuzz (fast variant of npm run fuzz)', () => {
  it(`fixed seed ${FIXED_SEED}`, async () => fuzz(FIXED_SEED));
  it('random seed', async () => {
    const seed = randomBytes(4).readInt32LE();
    console.log(`fuzz: random seed ${seed} (replay: npm run fuzz -- --runs ${RUNS} --seed ${seed})`);
    await fuzz(seed);
  });
  it('gRPC: every unary method, generated fields and credentials, never INTERNAL or UNKNOWN', async () => {
    const ids = (await server.spool.db.query<{ id: string }>('SELECT id::text FROM spool.jobs LIMIT 100')).rows.map((r) => r.id);
    const report = await runGrpcFuzz(`127.0.0.1:${server.grpcPort}`, server.apiKey, () => ids, { runs: 150, seed: FIXED_SEED });
    console.log(`fuzz grpc: runs=${report.runs} methods=${report.methods} ${JSON.stringify(report.codes)}`);
    assert.deepEqual(report.failures, []);
    assert.ok((report.codes.OK ?? 0) > 10, `some calls succeed: ${JSON.stringify(report.codes)}`);
  });
});
