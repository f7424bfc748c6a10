import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import WebSocket from 'ws';
import { JobRetention, WorkerLiveness, queuePause } from '@spool/engine';
import { grpcClient, type GrpcTestClient } from '../../../test-support/grpc.js';
import { startReceiver, type Receiver } from '../../../test-support/receiver.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';

/**
 * Queue, worker and schedule events (spool.events): each kind of change
 * reaches SSE, the WebSocket and subscribed webhooks of its organization,
 * and nothing of it reaches another organization.
 */

const TYPES = ['queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered', 'schedule.triggered'];
const WIRE: Record<string, string> = { 'worker.registered': 'WorkerRegistered', 'worker.deregistered': 'WorkerDeregistered' };

let server: TestServer;
let other: { organizationId: string; apiKey: string };
let grpc: GrpcTestClient;
const closers: (() => unknown)[] = [];

before(async () => {
  server = await startTestServer('eventslog');
  other = await server.createOrganization();
  grpc = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  for (const close of closers.reverse()) await close();
  grpc.close();
  await server.close();
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function sse(path: string, headers: Record<string, string> = auth(server.apiKey)): Promise<SseClient> {
  const client = await openSse(`${server.url}${path}`, headers);
  assert.equal(client.status, 200);
  closers.push(() => client.close());
  return client;
}

interface WsClient {
  messages: any[];
  send(command: unknown): void;
  next(predicate: (m: any) => boolean, timeoutMs?: number): Promise<any>;
}

async function ws(key: string, query = ''): Promise<WsClient> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/ws${query}`, { headers: auth(key) });
  closers.push(() => socket.close());
  const messages: any[] = [];
  const waiters: { p: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(data.toString());
    messages.push(message);
    for (const w of [...waiters]) if (w.p(message)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(message); }
  });
  const client: WsClient = {
    messages,
    send: (command) => socket.send(JSON.stringify(command)),
    next: (p, timeoutMs = 5000) => {
      const found = messages.find(p);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching WebSocket message; got ${JSON.stringify(messages.map((m) => m.type))}`)), timeoutMs);
        waiters.push({ p, resolve: (m) => { clearTimeout(timer); resolve(m); } });
      });
    },
  };
  await new Promise((resolve, reject) => { socket.on('open', resolve); socket.on('error', reject); });
  await client.next((m) => m.type === 'Ping'); // attached: no event is missed from here on
  return client;
}

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  closers.push(() => r.close());
  return r;
}

async function subscribe(url: string, key: string): Promise<void> {
  const response = await server.request('POST', '/api/v1/outgoing-webhooks', { auth: key, body: { name: 'events', url, events: TYPES, secret: 'shh' } });
  assert.equal(response.status, 201, response.text);
}

async function ok(method: string, path: string, body?: unknown, key = server.apiKey): Promise<any> {
  const response = await server.request(method, path, { body, auth: key });
  assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${response.text}`);
  return response.body;
}

/** An event expected on every channel: its dotted type and data fields it must carry. */
interface Expected {
  type: string;
  data: Record<string, unknown>;
}

const matches = (type: string, data: Record<string, unknown>, want: Expected) =>
  type === want.type && Object.entries(want.data).every(([key, value]) => data?.[key] === value);
/** A realtime envelope (PascalCase or dotted type) that is `want`. */
const isEnvelope = (want: Expected) => (m: any) => matches(m?.type === WIRE[want.type] ? want.type : m?.type, m?.data, want);

const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;

describe('queue, worker and schedule events', () => {
  it('reach SSE, the WebSocket and subscribed webhooks of the organization, and no other organization', async () => {
    const hook = await receiver();
    const otherHook = await receiver();
    await subscribe(hook.url, server.apiKey);
    await subscribe(otherHook.url, other.apiKey);
    const stream = await sse('/api/v1/events');
    const socket = await ws(server.apiKey);
    const otherStream = await sse('/api/v1/events', auth(other.apiKey));
    const otherSocket = await ws(other.apiKey);
    const q = unique('evq');
    const configured = unique('evc');
    const queueStream = await sse(`/api/v1/events/queues/${q}`);
    const filtered = await sse('/api/v1/events?events=queue.resumed,WorkerDeregistered');
    const subscribed = await ws(server.apiKey);
    subscribed.send({ cmd: 'Subscribe', queue: q });
    subscribed.send({ cmd: 'Ping' });
    await subscribed.next((m) => m.type === 'Ping' && m !== subscribed.messages[0]);

    const expected: Expected[] = [];
    // Queues: POST pause/resume, and PUT config enabled=false/true.
    await ok('POST', `/api/v1/queues/${q}/pause`, { reason: 'maintenance' });
    expected.push({ type: 'queue.paused', data: { queue_name: q, reason: 'maintenance' } });
    await ok('POST', `/api/v1/queues/${q}/resume`);
    expected.push({ type: 'queue.resumed', data: { queue_name: q } });
    await ok('PUT', `/api/v1/queues/${configured}/config`, { queue_name: configured, enabled: false });
    expected.push({ type: 'queue.paused', data: { queue_name: configured, reason: null } });
    await ok('PUT', `/api/v1/queues/${configured}/config`, { queue_name: configured, enabled: true });
    expected.push({ type: 'queue.resumed', data: { queue_name: configured } });
    // Workers over REST (on queue q: the queue's stream must not show them) and gRPC.
    const rest = (await ok('POST', '/api/v1/workers/register', { queue_name: q, hostname: 'rest-host' })).id as string;
    expected.push({ type: 'worker.registered', data: { worker_id: rest, queue_name: q, hostname: 'rest-host' } });
    await ok('POST', `/api/v1/workers/${rest}/deregister`);
    expected.push({ type: 'worker.deregistered', data: { worker_id: rest, queue_name: q, reason: 'deregistered' } });
    const { workerId: viaGrpc } = await grpc.call('workers', 'Register', { queueName: 'ev-grpc', hostname: 'grpc-host' });
    expected.push({ type: 'worker.registered', data: { worker_id: viaGrpc, queue_name: 'ev-grpc', hostname: 'grpc-host' } });
    assert.deepEqual(await grpc.call('workers', 'Deregister', { workerId: viaGrpc }), { success: true });
    expected.push({ type: 'worker.deregistered', data: { worker_id: viaGrpc, reason: 'deregistered' } });
    // A worker that stops heartbeating counts as deregistered; its next heartbeat registers it again.
    const silent = (await ok('POST', '/api/v1/workers/register', { queue_name: 'ev-silent', hostname: 'silent-host' })).id as string;
    expected.push({ type: 'worker.registered', data: { worker_id: silent, hostname: 'silent-host' } });
    await server.database.pool.query("UPDATE spool.workers SET last_heartbeat = now() - interval '10 minutes' WHERE id = $1", [silent]);
    await new WorkerLiveness(server.spool.db, { silenceMs: 60_000 }).runOnce();
    expected.push({ type: 'worker.deregistered', data: { worker_id: silent, reason: 'missed_heartbeats' } });
    await ok('POST', `/api/v1/workers/${silent}/heartbeat`, { current_jobs: 0 });
    expected.push({ type: 'worker.registered', data: { worker_id: silent, revived: true } });
    // Schedules: a manual trigger and a cron tick.
    const manual = (await ok('POST', '/api/v1/schedules', { name: 'manual', cron_expression: '0 0 0 1 1 *', queue_name: 'ev-sched', payload_template: {} })).id as string;
    const triggered = await ok('POST', `/api/v1/schedules/${manual}/trigger`);
    expected.push({ type: 'schedule.triggered', data: { schedule_id: manual, job_id: triggered.job_id, queue_name: 'ev-sched', manual: true } });
    const cron = (await ok('POST', '/api/v1/schedules', { name: 'cron', cron_expression: '* * * * * *', queue_name: 'ev-cron', payload_template: {} })).id as string;
    const tick = await stream.waitFor((e) => e.data.type === 'schedule.triggered' && e.data.data.schedule_id === cron, 5000);
    await ok('POST', `/api/v1/schedules/${cron}/pause`);
    const cronJob = await server.database.pool.query('SELECT queue_name FROM spool.jobs WHERE id = $1', [tick.data.data.job_id]);
    assert.equal(cronJob.rows[0]?.queue_name, 'ev-cron', 'the event names the job the tick created');
    expected.push({ type: 'schedule.triggered', data: { schedule_id: cron, job_id: tick.data.data.job_id, manual: false } });

    for (const want of expected) {
      const event = await stream.waitFor((e) => isEnvelope(want)(e.data));
      assert.match(event.id ?? '', /^h\d+(~[\d,]+)?\.e\d+(~[\d,]+)?$/, 'SSE id: history and event log positions');
      assert.ok(!Number.isNaN(Date.parse(event.data.data.timestamp)));
      await socket.next(isEnvelope(want));
      const delivered = await waitForRequest(hook, (r) => matches(r.json?.event, r.json?.data, want));
      assert.equal(delivered.headers['x-spooled-event'], want.type);
      assert.match(delivered.headers['x-spooled-signature'] as string, /^sha256=[0-9a-f]{64}$/);
      assert.ok(!Number.isNaN(Date.parse(delivered.json.timestamp)));
    }
    // Wire names: PascalCase where docs/compatibility.md §4 has one, dotted otherwise.
    const types = new Set(stream.events.map((e) => e.data.type));
    for (const type of ['queue.paused', 'queue.resumed', 'WorkerRegistered', 'WorkerDeregistered', 'schedule.triggered']) assert.ok(types.has(type), type);
    for (const type of ['worker.registered', 'worker.deregistered']) assert.ok(!types.has(type), `${type} travels as ${WIRE[type]}`);

    // The queue's stream: its queue.* events, not the worker registered on it.
    await queueStream.waitFor((e) => e.data.type === 'queue.resumed');
    assert.deepEqual(queueStream.events.filter((e) => e.data.type !== 'QueueStats').map((e) => `${e.data.type}:${e.data.data.queue_name}`), [`queue.paused:${q}`, `queue.resumed:${q}`]);
    // A WebSocket subscribed to queue q: the events naming q, nothing else.
    await subscribed.next(isEnvelope({ type: 'worker.deregistered', data: { worker_id: rest } }));
    assert.deepEqual(subscribed.messages.filter((m) => m.type !== 'Ping').map((m) => `${m.type}:${m.data.queue_name}`),
      [`queue.paused:${q}`, `queue.resumed:${q}`, `WorkerRegistered:${q}`, `WorkerDeregistered:${q}`]);
    // The deliveries are listed with the webhook.
    const hooks = await ok('GET', '/api/v1/outgoing-webhooks');
    const mine = hooks.find((h: { url: string }) => h.url === hook.url);
    const deliveries = await ok('GET', `/api/v1/outgoing-webhooks/${mine.id}/deliveries`);
    for (const type of TYPES) assert.ok(deliveries.some((d: { event: string; status: string }) => d.event === type && d.status === 'success'), `${type} delivery listed`);
    // ?events= filters by name, in either spelling.
    await filtered.waitFor((e) => isEnvelope({ type: "worker.deregistered", data: { worker_id: silent } })(e.data));
    assert.deepEqual([...new Set(filtered.events.map((e) => e.data.type))].sort(), ['WorkerDeregistered', 'queue.resumed']);

    // The other organization's own event reaches it; none of the first organization's did.
    const theirs = unique('theirs');
    await ok('POST', `/api/v1/queues/${theirs}/pause`, {}, other.apiKey);
    const own = { type: 'queue.paused', data: { queue_name: theirs } };
    await otherStream.waitFor((e) => isEnvelope(own)(e.data));
    await otherSocket.next(isEnvelope(own));
    await waitForRequest(otherHook, (r) => matches(r.json?.event, r.json?.data, own));
    const leaked = (data: Record<string, unknown> | undefined) => expected.some((want) => matches(want.type, data ?? {}, { type: want.type, data: want.data }));
    assert.ok(!otherStream.events.some((e) => leaked(e.data.data)), 'no event of another organization on SSE');
    assert.ok(!otherSocket.messages.some((m) => leaked(m.data)), 'no event of another organization on the WebSocket');
    assert.ok(!otherHook.requests.some((r) => leaked(r.json?.data)), 'no event of another organization at its webhook');
    assert.equal(otherHook.requests.length, 1);
  });

  it('announces transitions only: pausing twice, resuming a running queue, deregistering twice', async () => {
    const q = unique('trans');
    await ok('POST', `/api/v1/queues/${q}/pause`);
    await ok('POST', `/api/v1/queues/${q}/pause`, { reason: 'again' });
    await ok('PUT', `/api/v1/queues/${q}/config`, { queue_name: q, enabled: false });
    await ok('POST', `/api/v1/queues/${q}/resume`);
    await ok('POST', `/api/v1/queues/${q}/resume`);
    await ok('PUT', `/api/v1/queues/${q}/config`, { queue_name: q, max_retries: 2 });
    const worker = (await ok('POST', '/api/v1/workers/register', { queue_name: q, hostname: 'h' })).id as string;
    await ok('POST', `/api/v1/workers/${worker}/deregister`);
    await ok('POST', `/api/v1/workers/${worker}/deregister`);
    const rows = await server.database.pool.query<{ type: string }>(
      "SELECT type FROM spool.events WHERE organization_id = $1 AND (data->>'queue_name' = $2) ORDER BY id", [server.organizationId, q]);
    assert.deepEqual(rows.rows.map((r) => r.type), ['queue.paused', 'queue.resumed', 'worker.registered', 'worker.deregistered']);
  });

  it('announces a queue first paused and enabled by concurrent transactions: paused, then resumed', async () => {
    const typesOf = async (q: string) => (await server.database.pool.query<{ type: string }>(
      "SELECT type FROM spool.events WHERE organization_id = $1 AND data->>'queue_name' = $2 ORDER BY id", [server.organizationId, q])).rows.map((r) => r.type);
    // The racing request must be waiting on the uncommitted row before that commits.
    const blocked = async () => {
      for (let i = 0; i < 100; i++) {
        const waiting = await server.database.pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        if (waiting.rows.length > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('the racing request never waited on the row lock');
    };
    const pauser = new pg.Client({ connectionString: server.database.url });
    await pauser.connect();
    try {
      // The enabling PUT cannot see the row the uncommitted pause created: it waits on it, then updates it.
      const raced = unique('race');
      await pauser.query('BEGIN');
      await queuePause(pauser, server.organizationId, raced, null);
      const put = server.request('PUT', `/api/v1/queues/${raced}/config`, { body: { queue_name: raced, enabled: true } });
      await blocked();
      await pauser.query('COMMIT');
      const answer = await put;
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.enabled, true);
      assert.deepEqual(await typesOf(raced), ['queue.paused', 'queue.resumed']);
      // The other way round: a config row created running, then paused by a waiting pause.
      const created = unique('race');
      await pauser.query('BEGIN');
      await pauser.query("INSERT INTO spool.queue_config (organization_id, queue_name) VALUES ($1, $2)", [server.organizationId, created]);
      const pause = server.request('POST', `/api/v1/queues/${created}/pause`, { body: {} });
      await blocked();
      await pauser.query('COMMIT');
      assert.equal((await pause).status, 200);
      assert.deepEqual(await typesOf(created), ['queue.paused']);
    } finally {
      await pauser.end();
    }
  });

  it('resumes with Last-Event-ID: exactly the missed events of both logs, then live ones', async () => {
    const q = unique('resume');
    const first = await sse('/api/v1/events');
    await ok('POST', `/api/v1/queues/${q}/pause`);
    await first.waitFor((e) => isEnvelope({ type: 'queue.paused', data: { queue_name: q } })(e.data));
    const token = first.lastEventId!;
    first.close();
    await ok('POST', `/api/v1/queues/${q}/resume`);
    const worker = (await ok('POST', '/api/v1/workers/register', { queue_name: q, hostname: 'resumer' })).id as string;
    const job = (await ok('POST', '/api/v1/jobs', { queue_name: q, payload: {} })).id as string;
    const second = await sse('/api/v1/events', { ...auth(server.apiKey), 'last-event-id': token });
    await second.waitFor((e) => e.data.type === 'JobCreated' && e.data.data.job_id === job);
    await second.waitFor((e) => isEnvelope({ type: 'worker.registered', data: { worker_id: worker } })(e.data));
    await ok('POST', `/api/v1/workers/${worker}/deregister`);
    await second.waitFor((e) => isEnvelope({ type: 'worker.deregistered', data: { worker_id: worker } })(e.data));
    const mine = second.events.filter((e) => e.data.data?.queue_name === q && e.data.type !== 'JobStatusChange').map((e) => e.data.type);
    assert.deepEqual(mine.filter((t) => t !== 'JobCreated'), ['queue.resumed', 'WorkerRegistered', 'WorkerDeregistered'], 'missed ones once each, nothing from before, then live');
    assert.equal(mine.filter((t) => t === 'JobCreated').length, 1);
    // The queue's stream resumes the same way: its queue.* events only.
    const queueFirst = await sse(`/api/v1/events/queues/${q}`);
    await ok('POST', `/api/v1/queues/${q}/pause`, { reason: 'one' });
    await queueFirst.waitFor((e) => isEnvelope({ type: 'queue.paused', data: { queue_name: q, reason: 'one' } })(e.data));
    const queueToken = queueFirst.lastEventId!;
    queueFirst.close();
    await ok('POST', `/api/v1/queues/${q}/resume`);
    await ok('POST', `/api/v1/workers/register`, { queue_name: q, hostname: 'not-on-queue-stream' });
    await ok('POST', `/api/v1/queues/${q}/pause`, { reason: 'two' });
    const queueSecond = await sse(`/api/v1/events/queues/${q}`, { ...auth(server.apiKey), 'last-event-id': queueToken });
    await queueSecond.waitFor((e) => isEnvelope({ type: 'queue.paused', data: { queue_name: q, reason: 'two' } })(e.data));
    assert.deepEqual(queueSecond.events.filter((e) => e.data.type !== 'QueueStats').map((e) => e.data.type), ['queue.resumed', 'queue.paused']);
  });

  it('delivers an event whose transaction commits after later ones, live and after a reconnect', async () => {
    const q = unique('late');
    const client = await sse('/api/v1/events');
    const slow = new pg.Client({ connectionString: server.database.url });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      await queuePause(slow, server.organizationId, q, 'late');
      const early = (await ok('POST', '/api/v1/workers/register', { queue_name: q, hostname: 'early' })).id as string;
      await client.waitFor((e) => isEnvelope({ type: 'worker.registered', data: { worker_id: early } })(e.data));
      const token = client.lastEventId!;
      assert.match(token, /\.e\d+~\d+/, 'the token names the event id that is not visible yet');
      client.close();
      const resumed = await sse('/api/v1/events', { ...auth(server.apiKey), 'last-event-id': token });
      const live = await sse('/api/v1/events');
      await slow.query('COMMIT');
      const paused = isEnvelope({ type: 'queue.paused', data: { queue_name: q, reason: 'late' } });
      await resumed.waitFor((e) => paused(e.data));
      await live.waitFor((e) => paused(e.data));
      assert.equal(resumed.events.filter((e) => isEnvelope({ type: 'worker.registered', data: { worker_id: early } })(e.data)).length, 0, 'no duplicate after resume');
    } finally {
      await slow.end();
    }
  });

  it('is pruned by the job retention service after its window', async () => {
    const q = unique('old');
    await ok('POST', `/api/v1/queues/${q}/pause`);
    await ok('POST', `/api/v1/queues/${q}/resume`);
    await server.database.pool.query(
      "UPDATE spool.events SET created_at = now() - interval '8 days' WHERE data->>'queue_name' = $1 AND type = 'queue.paused'", [q]);
    await new JobRetention(server.spool.db, { eventDays: 7 }).runOnce();
    const left = await server.database.pool.query<{ type: string }>("SELECT type FROM spool.events WHERE data->>'queue_name' = $1", [q]);
    assert.deepEqual(left.rows.map((r) => r.type), ['queue.resumed']);
  });
});

async function waitForRequest(r: Receiver, predicate: (request: Receiver['requests'][number]) => boolean, timeoutMs = 10_000): Promise<Receiver['requests'][number]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = r.requests.find(predicate);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`webhook receiver got no matching request; got ${JSON.stringify(r.requests.map((q) => q.json?.event))}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
