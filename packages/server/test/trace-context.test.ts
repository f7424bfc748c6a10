/**
 * W3C trace context on enqueue (docs/observability.md, Tracing): strict
 * checks at the edge with precise 400s, storage on the job, and the claim
 * answer carrying it. The server here exports no traces: the value a client
 * sends is stored as it is (normalized to version 00).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { parseTraceparent, readTraceContext, tracestateError } from '@spool/protocol';
import { loadConfig } from '@spool/server';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient, toStruct, type GrpcTestClient } from '../../../test-support/grpc.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const OTHER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

let server: TestServer;
let grpc: GrpcTestClient;
before(async () => {
  server = await startTestServer('tracectx', { grpcPort: 0 });
  grpc = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
});
after(async () => {
  grpc.close();
  await server.close();
});

let counter = 0;
const freshQueue = () => `tc-${++counter}`;

async function claimOne(queue: string) {
  const answer = await server.request('POST', '/api/v1/jobs/claim', { body: { queue_name: queue, worker_id: 'w1', limit: 10 } });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.jobs as { id: string; traceparent: string | null; tracestate: string | null }[];
}

describe('traceparent parsing (protocol)', () => {
  it('accepts version 00 and later versions, and refuses what W3C calls invalid', () => {
    assert.deepEqual(parseTraceparent(PARENT), { ok: true, value: { traceId: TRACE_ID, spanId: '00f067aa0ba902b7', flags: 1 } });
    // A later version may carry more after a dash; it is kept as version 00.
    assert.deepEqual(readTraceContext(`cc-${TRACE_ID}-00f067aa0ba902b7-09-what-the-future-holds`, undefined), { ok: true, value: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-09`, tracestate: null } });
    const refusals: [string, RegExp][] = [
      [`00-${TRACE_ID}-00f067aa0ba902b7-01-extra`, /version 00 must be exactly 55 characters/],
      [`00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`, /trace-id must be lowercase hex/],
      [`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, /trace-id must not be all zeros/],
      [`00-${TRACE_ID}-${'0'.repeat(16)}-01`, /parent-id must not be all zeros/],
      [`ff-${TRACE_ID}-00f067aa0ba902b7-01`, /version ff is invalid/],
      [`00-${TRACE_ID}-00f067aa0ba902b7-0g`, /flags must be hex digits/],
      [`00_${TRACE_ID}_00f067aa0ba902b7_01`, /separated by "-"/],
      ['00-abc-def-01', /55 characters.*got 13/],
      [`cc-${TRACE_ID}-00f067aa0ba902b7-01x`, /after the flags must start with "-"/],
    ];
    for (const [value, message] of refusals) {
      const parsed = parseTraceparent(value);
      assert.equal(parsed.ok, false, value);
      assert.match((parsed as { message: string }).message, message, value);
    }
  });

  it('checks tracestate: 512 characters, 32 members, key=value', () => {
    assert.equal(tracestateError('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'), null);
    assert.equal(tracestateError('tenant@vendor=value, other=1'), null);
    assert.match(tracestateError(`a=${'x'.repeat(511)}`)!, /at most 512 characters \(got 513\)/);
    assert.match(tracestateError(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','))!, /at most 32 list members/);
    assert.match(tracestateError('novalue')!, /not a key=value list member/);
    assert.match(tracestateError('Upper=1')!, /not a key=value list member/);
    assert.match(tracestateError('k=a=b')!, /value of "k"/);
    assert.deepEqual(readTraceContext(undefined, 'k=v'), { ok: false, message: 'tracestate needs a traceparent', field: 'tracestate' });
  });
});

describe('POST /api/v1/jobs with trace context', () => {
  it('stores the traceparent/tracestate headers; GET and claim return them', async () => {
    const queue = freshQueue();
    const created = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {} }, headers: { traceparent: PARENT, tracestate: 'rojo=00f067aa0ba902b7' } });
    assert.equal(created.status, 201, created.text);
    const job = await server.request('GET', `/api/v1/jobs/${created.body.id}`);
    assert.equal(job.body.traceparent, PARENT);
    assert.equal(job.body.tracestate, 'rojo=00f067aa0ba902b7');
    const [claimed] = await claimOne(queue);
    assert.equal(claimed!.id, created.body.id);
    assert.equal(claimed!.traceparent, PARENT);
    assert.equal(claimed!.tracestate, 'rojo=00f067aa0ba902b7');
  });

  it('takes the body fields over the headers, and null when neither is given', async () => {
    const queue = freshQueue();
    const fromBody = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {}, traceparent: OTHER }, headers: { traceparent: PARENT } });
    assert.equal(fromBody.status, 201, fromBody.text);
    const none = await server.request('POST', '/api/v1/jobs', { body: { queue_name: queue, payload: {}, priority: -1 } });
    const jobs = await claimOne(queue);
    assert.deepEqual(jobs.map((job) => [job.id, job.traceparent, job.tracestate]), [[fromBody.body.id, OTHER, null], [none.body.id, null, null]]);
    assert.equal((await server.request('GET', `/api/v1/jobs/${none.body.id}`)).body.traceparent, null);
  });

  it('answers 400 with a precise message for a malformed header or field', async () => {
    const cases: { headers?: Record<string, string>; body?: Record<string, unknown>; message: RegExp; field: string }[] = [
      { headers: { traceparent: PARENT.toUpperCase() }, message: /^traceparent header: trace-id must be lowercase hex$/, field: 'traceparent header' },
      { headers: { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }, message: /trace-id must not be all zeros/, field: 'traceparent header' },
      { headers: { traceparent: PARENT, tracestate: `k=${'v'.repeat(600)}` }, message: /^tracestate header must be at most 512 characters \(got 602\)$/, field: 'tracestate header' },
      { headers: { tracestate: 'k=v' }, message: /^tracestate header needs a traceparent header$/, field: 'tracestate header' },
      { body: { traceparent: `00-${TRACE_ID}-${'0'.repeat(16)}-01` }, message: /^traceparent: parent-id must not be all zeros$/, field: 'traceparent' },
      { body: { traceparent: PARENT, tracestate: 'not a member' }, message: /^tracestate: "not a member" is not a key=value list member/, field: 'tracestate' },
    ];
    for (const c of cases) {
      const answer = await server.request('POST', '/api/v1/jobs', { body: { queue_name: freshQueue(), payload: {}, ...c.body }, headers: c.headers });
      assert.equal(answer.status, 400, `${JSON.stringify(c)}: ${answer.text}`);
      assert.equal(answer.body.code, 'VALIDATION_ERROR');
      assert.match(answer.body.message, c.message);
      assert.equal(answer.body.details.field, c.field);
    }
  });
});

describe('POST /api/v1/jobs/bulk with trace context', () => {
  it('stores each item\'s own context, gives the others the headers\', and reports a bad item in failed', async () => {
    const queue = freshQueue();
    const answer = await server.request('POST', '/api/v1/jobs/bulk', {
      headers: { traceparent: PARENT },
      body: {
        queue_name: queue,
        jobs: [
          { payload: { i: 0 }, traceparent: OTHER, tracestate: 'k=v', priority: 3 },
          { payload: { i: 1 }, priority: 2 },
          { payload: { i: 2 }, traceparent: 'bad' },
          { payload: { i: 3 }, tracestate: 'k=v' },
        ],
      },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.failed, [
      { index: 2, error: 'jobs[2].traceparent must be version-traceid-parentid-flags, 55 characters (e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01); got 3' },
      { index: 3, error: 'jobs[3].tracestate needs a jobs[3].traceparent' },
    ]);
    const jobs = await claimOne(queue);
    assert.deepEqual(jobs.map((job) => [job.traceparent, job.tracestate]), [[OTHER, 'k=v'], [PARENT, null]]);
  });

  it('refuses the whole request for malformed headers', async () => {
    const answer = await server.request('POST', '/api/v1/jobs/bulk', { headers: { traceparent: 'nope' }, body: { queue_name: freshQueue(), jobs: [{ payload: {} }] } });
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.body.message, /^traceparent header must be version-traceid-parentid-flags/);
  });
});

describe('gRPC Enqueue with trace metadata', () => {
  it('stores traceparent/tracestate metadata and refuses a malformed one with INVALID_ARGUMENT', async () => {
    const queue = freshQueue();
    const call = (metadata: Record<string, string>) => new Promise<any>((resolve, reject) => {
      const md = grpc.metadata();
      for (const [key, value] of Object.entries(metadata)) md.add(key, value);
      grpc.queue.Enqueue({ queueName: queue, payload: toStruct({ a: 1 }) }, md, { deadline: Date.now() + 30_000 }, (err: Error | null, response: any) => (err ? reject(err) : resolve(response)));
    });
    const created = await call({ traceparent: PARENT, tracestate: 'rojo=1' });
    const job = await server.request('GET', `/api/v1/jobs/${created.jobId}`);
    assert.equal(job.body.traceparent, PARENT);
    assert.equal(job.body.tracestate, 'rojo=1');
    await assert.rejects(call({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-1` }), (err: { code: number; details: string }) => {
      assert.equal(err.code, status.INVALID_ARGUMENT);
      assert.match(err.details, /traceparent header/);
      return true;
    });
  });
});

describe('tracing configuration', () => {
  it('reads the standard OpenTelemetry variables', () => {
    assert.equal(loadConfig({}).otlpTracesUrl, null);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).otlpTracesUrl, 'http://collector:4318/v1/traces');
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/otlp/' }).otlpTracesUrl, 'http://collector:4318/otlp/v1/traces');
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/traces' }).otlpTracesUrl, 'https://b/traces');
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' }).otlpTracesUrl, null);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' }).otlpTracesUrl, null);
    assert.equal(loadConfig({ OTEL_SERVICE_NAME: 'jobs-eu' }).otelServiceName, 'jobs-eu');
    assert.equal(loadConfig({}).otelServiceName, 'spool');
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/);
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a', OTEL_TRACES_EXPORTER: 'zipkin' }), /OTLP only/);
  });
});
