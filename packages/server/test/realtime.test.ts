import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import WebSocket from 'ws';
import { jobInsertMany } from '@spool/engine';
import { TokenService } from '../src/http/jwt.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';
import { httpWorker, type HttpWorker } from '../../../test-support/worker.js';

let server: TestServer;
let worker: HttpWorker;
let jwt: string;
const open: SseClient[] = [];

before(async () => {
  server = await startTestServer('realtime');
  worker = httpWorker(server);
  const tokens = await TokenService.create(server.spool.db, null);
  const key = await server.spool.db.query<{ id: string }>('SELECT id FROM spool.api_keys WHERE organization_id = $1', [server.organizationId]);
  jwt = (await tokens.sign({ organizationId: server.organizationId, apiKeyId: key.rows[0]!.id, queues: ['*'], type: 'access' })).token;
});
after(async () => {
  for (const client of open) client.close();
  await server.close();
});

async function sse(path: string, headers: Record<string, string> = { authorization: `Bearer ${server.apiKey}` }): Promise<SseClient> {
  const client = await openSse(`${server.url}${path}`, headers);
  open.push(client);
  return client;
}

async function createJob(queue: string, payload: unknown = {}): Promise<string> {
  const response = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload } });
  assert.equal(response.status, 201);
  return response.body.id;
}

const created = (jobId: string) => (e: { data: any }) => e.data.type === 'JobCreated' && e.data.data.job_id === jobId;

describe('SSE /api/v1/events', () => {
  it("streams a job's events in order as unnamed data events with ids", async () => {
    const client = await sse('/api/v1/events');
    assert.equal(client.status, 200);
    const jobId = await createJob('rt-order');
    const [job] = await worker.claim('rt-order');
    await worker.complete(job!, { ok: 1 });
    const done = await client.waitFor((e) => e.data.type === 'JobCompleted' && e.data.data.job_id === jobId);
    assert.deepEqual(done.data.data.result, { ok: 1 });
    const mine = client.events.filter((e) => e.data.data?.job_id === jobId).map((e) => e.data.type === 'JobStatusChange' ? `${e.data.data.old_status}>${e.data.data.new_status}` : e.data.type);
    assert.deepEqual(mine, ['JobCreated', 'pending>processing', 'job.started', 'processing>completed', 'JobCompleted']);
    const createdEvent = client.events.find(created(jobId))!;
    assert.equal(createdEvent.data.data.queue_name, 'rt-order');
    assert.equal(createdEvent.data.data.priority, 0);
    assert.ok(createdEvent.data.data.timestamp);
    assert.ok(client.events.every((e) => e.name === null), 'no event: lines');
    assert.ok(client.lastEventId && /^h\d+/.test(client.lastEventId));
    client.close();
  });

  it('replays exactly the missed events after a reconnect with Last-Event-ID', async () => {
    const first = await sse('/api/v1/events');
    const before = await createJob('rt-resume', { n: 0 });
    await first.waitFor(created(before));
    const resumeFrom = first.lastEventId!;
    first.close();
    const missed = [await createJob('rt-resume', { n: 1 }), await createJob('rt-resume', { n: 2 })];
    const second = await sse('/api/v1/events', { authorization: `Bearer ${server.apiKey}`, 'last-event-id': resumeFrom });
    for (const id of missed) await second.waitFor(created(id));
    const after = await createJob('rt-resume', { n: 3 });
    await second.waitFor(created(after));
    const seen = second.events.filter((e) => e.data.type === 'JobCreated').map((e) => e.data.data.job_id);
    assert.deepEqual(seen, [...missed, after], 'the missed jobs once each, then live; nothing from before');
  });

  it('delivers an event whose transaction commits after later ones, live and after a reconnect', async () => {
    const client = await sse('/api/v1/events');
    const slow = new pg.Client({ connectionString: server.database.url });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      const [late] = await jobInsertMany(slow, [{ organizationId: server.organizationId, queueName: 'rt-late', payload: 'late' }]);
      const early = await createJob('rt-late', 'early');
      await client.waitFor(created(early));
      const token = client.lastEventId!;
      assert.match(token, /~/, 'the resume token names the id that is not visible yet');
      client.close();
      const resumed = await sse('/api/v1/events', { authorization: `Bearer ${server.apiKey}`, 'last-event-id': token });
      const live = await sse('/api/v1/events');
      await slow.query('COMMIT');
      await resumed.waitFor(created(late!.id));
      assert.equal(resumed.events.filter(created(early)).length, 0, 'no duplicate after resume');
      await live.waitFor(created(late!.id));
    } finally {
      await slow.end();
    }
  });

  it('authenticates with a Bearer API key, ?token=<jwt>, and refuses without credentials', async () => {
    const byToken = await sse(`/api/v1/events?token=${jwt}`, {});
    assert.equal(byToken.status, 200);
    byToken.close();
    const none = await sse('/api/v1/events', {});
    assert.equal(none.status, 401);
    const bad = await sse('/api/v1/events?token=eyJnope', {});
    assert.equal(bad.status, 401);
  });

  it('filters with ?events=', async () => {
    const client = await sse('/api/v1/events?events=job.completed');
    const jobId = await createJob('rt-filter');
    const [job] = await worker.claim('rt-filter');
    await worker.complete(job!);
    await client.waitFor((e) => e.data.type === 'JobCompleted' && e.data.data.job_id === jobId);
    assert.ok(client.events.every((e) => e.data.type === 'JobCompleted'));
  });

  it("keeps an unknown ?events= name of the contract's filter (it selects nothing) and says so in a Warning", async () => {
    const abort = new AbortController();
    try {
      const response = await fetch(`${server.url}/api/v1/events?events=JobCompleted,job.cancelled,job.complted`, { headers: { authorization: `Bearer ${server.apiKey}` }, signal: abort.signal });
      assert.equal(response.status, 200);
      const warning = response.headers.get('warning') ?? '';
      assert.match(warning, /^299 - "events: job\.cancelled, job\.complted match no event a stream carries/);
      assert.doesNotMatch(warning, /JobCompleted/);
    } finally {
      abort.abort();
    }
    const clean = new AbortController();
    try {
      const response = await fetch(`${server.url}/api/v1/events?events=job.completed,WorkerRegistered,queue.paused,*`, { headers: { authorization: `Bearer ${server.apiKey}` }, signal: clean.signal });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('warning'), null);
    } finally {
      clean.abort();
    }
  });
});

describe('SSE /api/v1/events/jobs/{id} and /events/queues/{name}', () => {
  it("follows one job's status from its current one and ends after a terminal status", async () => {
    const jobId = await createJob('rt-job');
    const client = await sse(`/api/v1/events/jobs/${jobId}`);
    await client.waitFor((e) => e.data.type === 'JobStatusChange');
    const [job] = await worker.claim('rt-job');
    await worker.complete(job!);
    await client.ended;
    const changes = client.events.map((e) => [e.data.type, e.data.data.old_status, e.data.data.new_status]);
    assert.deepEqual(changes, [['JobStatusChange', '', 'pending'], ['JobStatusChange', 'pending', 'processing'], ['JobStatusChange', 'processing', 'completed']]);
  });

  it('sends one Error and closes for an unknown job', async () => {
    const client = await sse('/api/v1/events/jobs/00000000-0000-4000-8000-000000000000');
    await client.ended;
    assert.deepEqual(client.events.map((e) => e.data.type), ['Error']);
  });

  it('sends QueueStats at once', async () => {
    await createJob('rt-queue');
    const client = await sse('/api/v1/events/queues/rt-queue');
    const stats = await client.waitFor((e) => e.data.type === 'QueueStats');
    assert.equal(stats.data.data.queue_name, 'rt-queue');
    assert.ok(stats.data.data.pending >= 1);
    for (const key of ['processing', 'completed', 'failed']) assert.equal(typeof stats.data.data[key], 'number');
  });

  it("refuses an unknown ?events= name on a queue's stream (Spool's own filter) with a 400 naming the known ones", async () => {
    const response = await server.request('GET', '/api/v1/events/queues/rt-typo?events=job.cancel_requestd');
    assert.equal(response.status, 400);
    assert.equal(response.body.code, 'VALIDATION_ERROR');
    assert.match(response.body.message, /unknown event name job\.cancel_requestd; use dotted or PascalCase names of .*job\.cancel_requested/);
    const many = await server.request('GET', `/api/v1/events/queues/rt-typo?events=${Array.from({ length: 8 }, (_, i) => `x${i}.${'y'.repeat(60)}`).join(',')}`);
    assert.equal(many.status, 400);
    assert.match(many.body.message, /unknown event names x0\.y+\.\.\., .* and 3 more; use/);
    assert.ok(many.body.message.length < 700, `a bounded message (${many.body.message.length} chars)`);
  });

  it('tells a filtered queue stream that a running job was asked to stop, and nothing else', async () => {
    const client = await sse('/api/v1/events/queues/rt-cancel?events=job.cancel_requested');
    const other = await createJob('rt-cancel');
    const jobId = await createJob('rt-cancel');
    const claimed = await worker.claim('rt-cancel', 2);
    assert.equal(claimed.length, 2);
    const cancel = await server.request('DELETE', `/api/v1/jobs/${jobId}`);
    assert.equal(cancel.body.details.cancel_requested, true);
    const event = await client.waitFor((e) => e.data.type === 'job.cancel_requested');
    assert.equal(event.data.data.job_id, jobId);
    assert.equal(event.data.data.queue_name, 'rt-cancel');
    assert.equal(event.data.data.worker_id, worker.workerId);
    await worker.complete(claimed.find((j) => j.id === other)!);
    await server.request('DELETE', `/api/v1/jobs/${jobId}`); // asking again writes nothing new
    await createJob('rt-cancel');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(client.events.map((e) => e.data.type), ['job.cancel_requested'], 'no QueueStats, no other job events');
  });
});

describe('WebSocket /api/v1/ws', () => {
  function connect(query: string): Promise<{ ws: WebSocket; messages: any[]; next: (p: (m: any) => boolean) => Promise<any> }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/ws${query}`);
      const messages: any[] = [];
      const waiters: { p: (m: any) => boolean; resolve: (m: any) => void }[] = [];
      ws.on('message', (data) => {
        const message = JSON.parse(data.toString());
        messages.push(message);
        for (const w of [...waiters]) if (w.p(message)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(message); }
      });
      ws.on('open', () => resolve({
        ws,
        messages,
        next: (p) => {
          const found = messages.find(p);
          if (found) return Promise.resolve(found);
          return new Promise((res, rej) => {
            const timer = setTimeout(() => rej(new Error(`no matching message; got ${JSON.stringify(messages.map((m) => m.type))}`)), 5000);
            waiters.push({ p, resolve: (m) => { clearTimeout(timer); res(m); } });
          });
        },
      }));
      ws.on('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
      ws.on('error', reject);
    });
  }

  it('sends a Ping on open and job events of subscribed queues', async () => {
    const { ws, messages, next } = await connect(`?token=${jwt}`);
    try {
      await next((m) => m.type === 'Ping');
      assert.equal(messages[0].type, 'Ping');
      ws.send(JSON.stringify({ cmd: 'Subscribe', queue: 'ws-yes' }));
      ws.send(JSON.stringify({ cmd: 'Ping' }));
      await next((m) => m.type === 'Ping' && m !== messages[0]);
      const skipped = await createJob('ws-no');
      const wanted = await createJob('ws-yes');
      const event = await next((m) => m.type === 'JobCreated');
      assert.equal(event.data.job_id, wanted);
      assert.ok(!messages.some((m) => m.data?.job_id === skipped));
    } finally {
      ws.close();
    }
  });

  it("accepts cmd, command and type in any case and answers a requestId as the Python SDK expects", async () => {
    const { ws, messages, next } = await connect(`?token=${jwt}`);
    try {
      await next((m) => m.type === 'Ping');
      ws.send(JSON.stringify({ type: 'subscribe', requestId: 'r1', queue: 'ws-py' }));
      assert.deepEqual(await next((m) => m.requestId === 'r1'), { type: 'subscribed', requestId: 'r1', queue: 'ws-py', job_id: null });
      // The other queue's job first: events come in order, so once the wanted
      // one is here the skipped one has been passed over (and not merely
      // delayed until after the unsubscribe below, which lets every event in).
      const skipped = await createJob('ws-py-other');
      const wanted = await createJob('ws-py');
      assert.equal((await next((m) => m.type === 'JobCreated')).data.job_id, wanted, 'the subscription took effect');
      ws.send(JSON.stringify({ command: 'PING', requestId: 'r2' }));
      assert.equal((await next((m) => m.requestId === 'r2')).type, 'pong');
      ws.send(JSON.stringify({ Type: 'x', type: 'UnSubscribe', requestId: 'r3' }));
      assert.equal((await next((m) => m.requestId === 'r3')).type, 'unsubscribed');
      ws.send(JSON.stringify({ type: 'dance', requestId: 'r4' }));
      const error = await next((m) => m.requestId === 'r4');
      assert.equal(error.type, 'error');
      assert.match(error.error, /Unknown command "dance"/);
      // The contract's spelling: no acknowledgement without a requestId, a Ping event for Ping.
      const before = messages.length;
      ws.send(JSON.stringify({ cmd: 'Subscribe', queue: 'ws-py' }));
      ws.send(JSON.stringify({ cmd: 'Ping' }));
      await next((m) => m.type === 'Ping' && messages.indexOf(m) >= before);
      assert.ok(!messages.slice(before).some((m) => m.type === 'subscribed'));
      assert.ok(!messages.some((m) => m.data?.job_id === skipped));
    } finally {
      ws.close();
    }
  });

  it('refuses the upgrade with 401 without a valid token', async () => {
    await assert.rejects(connect('?token=eyJbad'), (err: { statusCode?: number }) => err.statusCode === 401);
    await assert.rejects(connect(''), (err: { statusCode?: number }) => err.statusCode === 401);
  });
});

describe('slow clients', () => {
  it('drops an SSE client that does not read instead of buffering for it', async () => {
    const { connect } = await import('node:net');
    const url = new URL(server.url);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.apiKey}\r\n\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause(); // stop reading: the server's queue for this client grows
    const big = 'x'.repeat(256 * 1024);
    const rounds = 12;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(Array.from({ length: 5 }, () => createJob('rt-slow')));
      for (const job of await worker.claim('rt-slow', 5)) await worker.complete(job, { big });
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Read what was left: a dropped client sees its stream end after far less than was produced.
    let received = 0;
    socket.on('data', (chunk: Buffer) => { received += chunk.length; });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error(`slow client was not dropped (${received} bytes read)`)), 10_000))]);
    assert.ok(received < rounds * 5 * big.length, `stream ended after ${received} bytes`);
    socket.destroy();
  });
});

describe('shutdown', () => {
  it('ends open SSE streams and WebSockets when the server stops', async () => {
    const other = await startTestServer('realtimestop');
    try {
      const client = await openSse(`${other.url}/api/v1/events`, { authorization: `Bearer ${other.apiKey}` });
      const ws = new WebSocket(`${other.url.replace('http', 'ws')}/api/v1/ws`, { headers: { authorization: `Bearer ${other.apiKey}` } });
      const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
      await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
      const started = Date.now();
      await other.spool.stop();
      await client.ended;
      assert.ok([1001, 1005].includes(await closed), 'the socket is closed by the server');
      const elapsed = Date.now() - started;
      assert.ok(elapsed < 5000, `stop does not wait for the streams to end by themselves (${elapsed} ms)`);
    } finally {
      await other.close();
    }
  });
});

