import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { DoctorReading } from '@spool/engine';
import { diagnose, THRESHOLDS } from '../src/metrics/doctor.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';

const OPERATOR = 'doctor-operator-token';
const ADMIN = { 'x-admin-key': 'test-admin-key' };
let server: TestServer;
before(async () => {
  server = await startTestServer('doctor', { metricsToken: OPERATOR, metricsRefreshMs: 100 });
});
after(async () => server.close());

const scrape = async (auth: string) => (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${auth}` } })).text();

function reading(overrides: Partial<DoctorReading> = {}): DoctorReading {
  return { oldest_transaction: null, idle_in_transaction: 0, idle_in_transaction_longest_seconds: null, oldest_prepared_seconds: null, slots: [], tables: [], at: new Date(), ...overrides };
}

describe('queue doctor', () => {
  it('names the session that holds back vacuum, with its application and pid', async () => {
    const holder = new pg.Client({ connectionString: server.database.url, application_name: 'doctor-test-holder' });
    await holder.connect();
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, txid_current()');
      await new Promise((r) => setTimeout(r, 1100));
      const answer = await server.request('GET', '/api/v1/admin/doctor', { headers: ADMIN, auth: null });
      assert.equal(answer.status, 200, answer.text);
      const check = answer.body.checks.find((c: { name: string }) => c.name === 'oldest_transaction_age_seconds');
      assert.ok(check.value >= 1, `age ${check.value}`);
      assert.match(check.hint, /doctor-test-holder/);
      assert.match(check.hint, new RegExp(`session ${rows[0]!.pid}\\b`));
      const idle = answer.body.checks.find((c: { name: string }) => c.name === 'idle_in_transaction_sessions');
      assert.ok(idle.value >= 1);
      const tables = answer.body.checks.filter((c: { name: string }) => c.name.startsWith('dead_tuples:')).map((c: { name: string }) => c.name);
      assert.ok(tables.includes('dead_tuples:jobs_live') && tables.includes('dead_tuples:jobs_done') && tables.includes('dead_tuples:job_history'), tables.join());
      // The same signal on /metrics, for the operator only.
      let text = '';
      for (let i = 0; i < 50 && !/^spooled_db_oldest_transaction_age_seconds [1-9]/m.test(text); i++) {
        text = await scrape(OPERATOR);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(text, /^spooled_db_oldest_transaction_age_seconds [1-9]/m);
      assert.match(text, /^spooled_db_table_dead_tuples\{table="jobs_live"\} \d+/m);
      const tenant = await scrape(server.apiKey);
      assert.doesNotMatch(tenant, /spooled_db_/, 'the database signals are the operator\'s');
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
    const after = await server.request('GET', '/api/v1/admin/doctor', { headers: ADMIN, auth: null });
    const check = after.body.checks.find((c: { name: string }) => c.name === 'oldest_transaction_age_seconds');
    assert.doesNotMatch(check.hint, /doctor-test-holder/);
  });

  it("times this server's claims and reports their p99", async () => {
    await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'doctor-q', payload: {} } });
    const claimed = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: 'doctor-q', worker_id: 'w', limit: 5 } });
    assert.equal(claimed.body.jobs.length, 1);
    const answer = await server.request('GET', '/api/v1/admin/doctor', { headers: ADMIN, auth: null });
    const check = answer.body.checks.find((c: { name: string }) => c.name === 'claim_p99_ms');
    assert.ok(typeof check.value === 'number' && check.value > 0, JSON.stringify(check));
    assert.match(await scrape(OPERATOR), /^spooled_claim_duration_seconds_count [1-9]/m);
  });

  it('is the operator\'s: no admin key is 401, an organization key is not enough', async () => {
    assert.equal((await server.request('GET', '/api/v1/admin/doctor', { auth: null })).status, 401);
    assert.equal((await server.request('GET', '/api/v1/admin/doctor')).status, 401);
  });

  it('grades every check by its thresholds, worst first, with a hint that says what to do', () => {
    const old = THRESHOLDS.transactionAgeCriticalSeconds + 60;
    const checks = diagnose(reading({
      oldest_transaction: { pid: 4711, application_name: 'reporting', state: 'idle in transaction', client_addr: '10.0.3.7', xact_start: '2026-12-01T03:00:00Z', query_start: null, age_seconds: old },
      idle_in_transaction: 2,
      idle_in_transaction_longest_seconds: 120,
      tables: [
        { table: 'jobs', live_tuples: 1000, dead_tuples: 500_000, last_autovacuum: null, last_vacuum: null },
        { table: 'job_history', live_tuples: 10_000_000, dead_tuples: 500_000, last_autovacuum: null, last_vacuum: null },
      ],
      slots: [{ slot_name: 'old_standby', active: false, xmin_age: 1000 }],
    }), { claimP99Ms: 750, leasesExpiredLastHour: 12 });
    const by = Object.fromEntries(checks.map((c) => [c.name, c]));
    assert.equal(by.oldest_transaction_age_seconds!.status, 'critical');
    assert.match(by.oldest_transaction_age_seconds!.hint, /held back cleanup for 31 min: session 4711 \(application "reporting", idle in transaction, from 10\.0\.3\.7\).*pg_terminate_backend\(4711\)/);
    assert.equal(by.idle_in_transaction_sessions!.status, 'warn');
    assert.equal(by['dead_tuples:jobs']!.status, 'warn');
    assert.equal(by['dead_tuples:job_history']!.status, 'ok', 'dead rows under 20 % of live ones are normal churn');
    assert.equal(by.replication_slots_holding_xmin!.status, 'warn');
    assert.match(by.replication_slots_holding_xmin!.hint, /old_standby/);
    assert.equal(by.claim_p99_ms!.status, 'critical');
    assert.equal(by.leases_expired_last_hour!.status, 'warn');
    assert.deepEqual(checks.map((c) => c.status), [...checks.map((c) => c.status)].sort((a, b) => ['critical', 'warn', 'ok'].indexOf(a) - ['critical', 'warn', 'ok'].indexOf(b)));
    const healthy = diagnose(reading(), { claimP99Ms: 2, leasesExpiredLastHour: 0 });
    assert.ok(healthy.every((c) => c.status === 'ok'), JSON.stringify(healthy));
  });

  it('docs/alerts.yml and docs/grafana-dashboard.json use only metrics that /metrics serves', async () => {
    const text = await scrape(OPERATOR);
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const metricsIn = (source: string) => new Set([...source.matchAll(/\b((?:spooled|http|process)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, '')));
    const rules = readFileSync(new URL('../../../docs/alerts.yml', import.meta.url), 'utf8');
    const inRules = metricsIn(rules);
    assert.ok(inRules.size >= 8, [...inRules].join());
    for (const name of inRules) assert.ok(served.has(name), `docs/alerts.yml uses ${name}, which /metrics does not serve`);
    for (const alert of ['SpoolOldestPendingJobTooOld', 'SpoolVacuumHeldBack', 'SpoolSlowClaims', 'SpoolHotTableBloat']) assert.match(rules, new RegExp(`alert: ${alert}\\b`));
    const dashboard = JSON.parse(readFileSync(new URL('../../../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    assert.ok(dashboard.panels.length >= 8);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const used = metricsIn(target.expr);
        assert.ok(used.size > 0, `panel "${panel.title}" queries no Spool metric`);
        for (const name of used) assert.ok(served.has(name), `panel "${panel.title}" uses ${name}, which /metrics does not serve`);
      }
    }
  });
});
