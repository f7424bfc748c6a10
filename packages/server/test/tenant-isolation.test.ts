/**
 * Tenant isolation matrix, built from the server's route table so that a
 * route added later is covered without touching this file.
 *
 * Organization A owns data; B (a fresh organization per route) calls every
 * /api/v1 route with A's ids and queue names in path parameters, query
 * strings and body fields. For each call a control call uses random values
 * of the same kind. Isolation means B cannot tell A's objects from objects
 * that do not exist: both calls must get the same status and (normalized) the
 * same body, no A id or secret may appear in a response, and nothing is 5xx.
 * Calls without such slots are checked for leaks, and A's own view of its
 * data must be unchanged after the matrix ran (B changed nothing of A's).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { loadJobsAsIs } from '../../../test-support/job-fixtures.js';
import { callRoute, isApiRoute as isApi, pathParams, requestFor, seriesTotals, slotsOf, type Kind, type Route, type RouteCall } from '../../../test-support/route-table.js';

/** Routes whose answer depends on a path id by design, not on the caller's organization. */
const ADDRESSED_BY_PATH = [/^\/api\/v1\/webhooks\/:org_id\//];
/** Routes whose answers are global (not per organization): left out of the before/after snapshots. */
const ORG_AGNOSTIC = [/^\/api\/v1\/admin\//, /^\/api\/v1\/auth\//, /^\/api\/v1\/organizations\/(check|generate)-slug$/];
/** Paramless POSTs not to call as A while creating fixtures (they destroy or are not about A's data). */
const NOT_FIXTURE_CREATORS = [/\/auth\//, /\/purge$/, /\/clear$/, /\/dlq\/retry$/, /\/claim$/, /^\/api\/v1\/organizations$/, /\/admin\//];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;
const SECRET_SHAPES = /\b(sk_(test|live)_|whk_)[A-Za-z0-9_-]+|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
const VOLATILE_KEY = /uptime|_at$|_ms$|_secs?$|_seconds$|age|last_used|heartbeat|timestamp|request_id/;
const MARKER = `tenant-a-secret-${randomBytes(4).toString('hex')}`;

type Call = RouteCall;
const call = (method: string, path: string, apiKey: string, body?: unknown) => callRoute(server.url, method, path, apiKey, body);
const build = requestFor;

let server: TestServer;
let routes: Route[];
const aIds = new Set<string>();
const aNames = new Set<string>();
const aSecrets: string[] = [];

const randomValue = (kind: Kind) => (kind === 'uuid' ? randomUUID() : `q-${randomBytes(4).toString('hex')}`);

/** The response with everything that legitimately differs between two equivalent calls masked. */
function normalize(result: Call, substituted: string[]): string {
  const mask = (value: unknown, key = ''): unknown => {
    if (VOLATILE_KEY.test(key)) return '<volatile>';
    if (typeof value === 'string') {
      let out = value;
      for (const s of substituted) out = out.split(s).join('<substituted>');
      return out.replace(UUID, '<uuid>').replace(ISO, '<ts>').replace(SECRET_SHAPES, '<secret>');
    }
    // A time series (GET /stats/timeseries) moves its buckets when a minute passes: compare its totals.
    if (key === 'points' && Array.isArray(value)) return mask(seriesTotals(value, VOLATILE_KEY));
    if (Array.isArray(value)) return value.map((v) => mask(v));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, k)]));
    return value;
  };
  const body = result.contentType === 'text/event-stream' ? '<stream>' : mask(result.body);
  return JSON.stringify({ status: result.status, type: result.contentType, body });
}

function assertNoLeak(result: Call, label: string, allowed: string[] = []): void {
  assert.ok(result.status < 500, `${label} answered ${result.status}: ${result.text.slice(0, 200)}`);
  for (const secret of [...aIds, ...aSecrets, MARKER]) {
    if (allowed.includes(secret)) continue;
    assert.ok(!result.text.includes(secret), `${label} leaks ${secret}: ${result.text.slice(0, 300)}`);
  }
}

/** Collects A's ids (every UUID) and queue names (`queue_name`, or `name` beside queue counters) from a response. */
function harvest(value: unknown, key = '', siblings: string[] = []): void {
  if (typeof value === 'string') {
    for (const id of value.match(UUID) ?? []) aIds.add(id.toLowerCase());
    const queueish = key === 'queue_name' || (key === 'name' && siblings.some((k) => /^(pending|paused|processing)$/.test(k)));
    if (queueish && /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(value) && value.length <= 100) aNames.add(value);
  } else if (Array.isArray(value)) value.forEach((v) => harvest(v, key));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) harvest(v, k, Object.keys(value));
}

const paramless = (r: Route) => pathParams(r.url).length === 0;
const matches = (r: Route, list: RegExp[]) => list.some((re) => re.test(r.url));

/** A's view of everything it can read: every GET, with its own ids and names where a route takes them. */
async function snapshotOfA(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const route of routes.filter((r) => isApi(r) && r.method === 'GET' && !matches(r, ORG_AGNOSTIC))) {
    const kinds = [...slotsOf(route)];
    const candidates = kinds.length === 0 ? [null] : kinds.flatMap((kind) => [...(kind === 'uuid' ? aIds : aNames)].map((v) => ({ kind, v })));
    for (const candidate of candidates) {
      const values: Record<Kind, string> = { uuid: '00000000-0000-4000-8000-000000000000', name: 'no-such-queue' };
      if (candidate) values[candidate.kind] = candidate.v;
      const { path } = build(route, values);
      out.set(`GET ${path}`, normalize(await call('GET', path, server.apiKey), []));
    }
  }
  return out;
}

async function createFixturesOfA(): Promise<void> {
  const a = server.organizationId;
  const db = server.spool.db;
  // Whatever the creation routes of this build can make from a sample body (new resources included).
  for (const route of routes.filter((r) => isApi(r) && r.method === 'POST' && paramless(r) && !matches(r, NOT_FIXTURE_CREATORS))) {
    const { path, body } = build(route, { uuid: randomUUID(), name: 'tenant-a-queue' });
    const result = await call('POST', path, server.apiKey, body);
    if (result.status < 300) harvest(result.body);
  }
  const job = await server.request('POST', '/api/v1/jobs', { body: { queue_name: 'tenant-a-queue', payload: { secret: MARKER }, tags: { owner: MARKER } } });
  assert.equal(job.status, 201);
  const key = await server.request('POST', '/api/v1/api-keys', { body: { name: 'tenant a second key' } });
  aSecrets.push(server.apiKey, key.body.key);
  const token = await server.request('POST', '/api/v1/organizations/webhook-token/regenerate');
  aSecrets.push(token.body.token);
  const dead = await loadJobsAsIs(db, async (c) => {
    await c.query(
      `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, started_at, lease_id, lease_expires_at, assigned_worker_id)
       VALUES ($1, 'tenant-a-busy', 'processing', $2, now(), gen_random_uuid(), now() + interval '1 hour', 'tenant-a-worker')`,
      [a, JSON.stringify({ secret: MARKER })],
    );
    return c.query<{ id: string }>(
      `INSERT INTO spool.jobs (organization_id, queue_name, status, payload, completed_at, retry_count, last_error)
       VALUES ($1, 'tenant-a-queue', 'deadletter', $2, now(), 3, $3) RETURNING id`,
      [a, JSON.stringify({ secret: MARKER }), MARKER],
    );
  });
  await db.query(`INSERT INTO spool.dead_letter_queue (organization_id, job_id, queue_name, payload, error, retry_count) VALUES ($1, $2, 'tenant-a-queue', $3, $4, 3)`, [a, dead.rows[0]!.id, JSON.stringify({ secret: MARKER }), MARKER]);
  await db.query(`INSERT INTO spool.queue_config (organization_id, queue_name, enabled, paused_at, pause_reason) VALUES ($1, 'tenant-a-paused', false, now(), $2) ON CONFLICT DO NOTHING`, [a, MARKER]);
  await db.query(`INSERT INTO spool.workers (organization_id, queue_name, hostname, metadata) VALUES ($1, 'tenant-a-queue', 'tenant-a-host', $2)`, [a, JSON.stringify({ secret: MARKER })]);
  await db.query(
    `INSERT INTO spool.schedules (organization_id, name, cron_expression, queue_name, payload_template, is_active) VALUES ($1, 'tenant-a-schedule', '0 0 1 1 *', 'tenant-a-queue', $2, false)`,
    [a, JSON.stringify({ secret: MARKER })],
  );
  // Freeze what would otherwise change with time while the matrix runs (leases
  // expiring, workers going stale), so A's before/after views can be compared.
  await db.query("UPDATE spool.jobs SET lease_expires_at = now() + interval '1 hour' WHERE organization_id = $1 AND status = 'processing'", [a]);
  await db.query("UPDATE spool.workers SET last_heartbeat = now() + interval '1 hour' WHERE organization_id = $1", [a]);
  // Every id and queue name A can see through its own list routes, whoever created it.
  for (const route of routes.filter((r) => isApi(r) && r.method === 'GET' && paramless(r) && !matches(r, ORG_AGNOSTIC))) {
    const { path } = build(route, { uuid: randomUUID(), name: 'tenant-a-queue' });
    harvest((await call('GET', path, server.apiKey)).body);
  }
  for (const table of ['jobs', 'api_keys', 'workers', 'schedules', 'queue_config', 'dead_letter_queue']) {
    const rows = await db.query<{ id: string }>(`SELECT id::text FROM spool.${table} WHERE organization_id = $1`, [a]);
    for (const row of rows.rows) aIds.add(row.id);
  }
  aIds.add(a);
  for (const name of ['tenant-a-queue', 'tenant-a-busy', 'tenant-a-paused']) aNames.add(name);
}

before(async () => {
  server = await startTestServer('isolation', { publicRateLimitPerMinute: 0 });
  routes = server.spool.routes.filter(isApi);
});
after(async () => server.close());

describe('tenant isolation matrix (from the route table)', () => {
  it('B cannot read, change or even detect A’s objects through any /api/v1 route', async () => {
    const observer = await server.createOrganization();
    const observe = async () => {
      const out = new Map<string, string>();
      for (const route of routes.filter((r) => r.method === 'GET' && paramless(r) && !matches(r, ORG_AGNOSTIC))) {
        const { path } = build(route, { uuid: '00000000-0000-4000-8000-000000000000', name: 'tenant-a-queue' });
        const result = await call('GET', path, observer.apiKey);
        out.set(path, normalize(result, []));
      }
      return out;
    };
    const observedBefore = await observe();
    await createFixturesOfA();
    assert.ok(aIds.size >= 8, `fixtures: ${aIds.size} ids`);
    const aBefore = await snapshotOfA();

    let differential = 0;
    let plain = 0;
    for (const route of routes.filter((r) => !matches(r, ADDRESSED_BY_PATH))) {
      const b = await server.createOrganization();
      const kinds = [...slotsOf(route)];
      const label = `${route.method} ${route.url}`;
      if (kinds.length === 0) {
        const { path, body } = build(route, { uuid: randomUUID(), name: randomValue('name') });
        assertNoLeak(await call(route.method, path, b.apiKey, body), label);
        plain += 1;
        continue;
      }
      const neutral: Record<Kind, string> = { uuid: randomUUID(), name: randomValue('name') };
      for (const kind of kinds) {
        // One control call per route and kind: what B gets for a value that names nothing.
        const control = randomValue(kind);
        const controlRequest = build(route, { ...neutral, [kind]: control });
        const expected = normalize(await call(route.method, controlRequest.path, b.apiKey, controlRequest.body), [control]);
        for (const value of kind === 'uuid' ? aIds : aNames) {
          const probe = build(route, { ...neutral, [kind]: value });
          const probed = await call(route.method, probe.path, b.apiKey, probe.body);
          assertNoLeak(probed, `${label} with A's ${value}`, [value]);
          assert.equal(normalize(probed, [value]), expected, `${label}: B can tell A's ${kind} ${value} from a nonexistent one`);
          differential += 1;
        }
      }
    }
    assert.ok(differential > 50 && plain > 5, `matrix ran ${differential} differential and ${plain} plain checks`);

    const aAfter = await snapshotOfA();
    for (const [request, before] of aBefore) assert.equal(aAfter.get(request), before, `A's view changed after B's calls: ${request}`);
    const observedAfter = await observe();
    for (const [path, before] of observedBefore) assert.equal(observedAfter.get(path), before, `an unrelated organization sees A's data through ${path}`);
  });

  it('covers the routes it should (sanity check on the route table)', () => {
    const urls = new Set(routes.map((r) => `${r.method} ${r.url}`));
    for (const expected of ['GET /api/v1/jobs/:id', 'GET /api/v1/api-keys/:id', 'DELETE /api/v1/api-keys/:id', 'GET /api/v1/organizations/:id', 'PUT /api/v1/organizations/:id', 'GET /api/v1/dashboard']) {
      assert.ok(urls.has(expected), `${expected} is in the route table`);
    }
  });
});
