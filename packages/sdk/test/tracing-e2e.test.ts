/**
 * Tracing end to end: an application enqueues inside its own span through
 * the SDK client, the server (exporting to a local OTLP/HTTP receiver)
 * records its enqueue, claim, fail and complete spans, and the SDK worker
 * runs each attempt of the handler in a `process` span of the same trace.
 * The application's spans go through its own tracer provider, registered
 * globally as an application would; the server's through its own.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { startReceiver } from '../../../test-support/receiver.js';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { SpoolClient, Worker } from '../src/index.js';

interface OtlpSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code?: number };
}

/** OTLP/JSON carries ids as hex; base64 is decoded in case a receiver meets the protobuf-style JSON form. */
function hexId(value: unknown, bytes: number): string {
  if (typeof value !== 'string' || value === '') return '';
  if (value.length === bytes * 2 && /^[0-9a-f]+$/i.test(value)) return value.toLowerCase();
  return Buffer.from(value, 'base64').toString('hex');
}

function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const entry of (list as { key: string; value: Record<string, unknown> }[] | undefined) ?? []) {
    const value = entry.value;
    out[entry.key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue;
  }
  return out;
}

/** A plain OTLP/HTTP receiver: POST /v1/traces with a JSON (optionally gzipped) ExportTraceServiceRequest. */
async function startOtlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; requests: number; close(): Promise<void> }> {
  const state = { spans: [] as OtlpSpan[], requests: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !(req.headers['content-type'] ?? '').includes('application/json')) {
        res.writeHead(415).end();
        return;
      }
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const body = JSON.parse(raw.toString('utf8')) as { resourceSpans?: any[] };
      state.requests += 1;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributes(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            state.spans.push({
              service,
              traceId: hexId(span.traceId, 16),
              spanId: hexId(span.spanId, 8),
              parentSpanId: hexId(span.parentSpanId, 8),
              name: span.name,
              kind: span.kind,
              attributes: attributes(span.attributes),
              links: (span.links ?? []).map((link: any) => ({ traceId: hexId(link.traceId, 16), spanId: hexId(link.spanId, 8), attributes: attributes(link.attributes) })),
              status: span.status ?? {},
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get spans() { return state.spans; },
    get requests() { return state.requests; },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

async function waitFor(what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let server: TestServer;
let provider: NodeTracerProvider;

before(async () => {
  receiver = await startOtlpReceiver();
  server = await startTestServer('sdk_tracing', { otlpTracesUrl: `${receiver.url}/v1/traces`, otelServiceName: 'spool-under-test' });
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'traced-app' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` }))],
  });
  // What an application does: the global provider, context manager and W3C propagator.
  provider.register();
});

after(async () => {
  await provider?.shutdown();
  await server?.close();
  await receiver?.close();
});

test('one trace from an enqueue in the application\'s span to every attempt of the worker\'s handler, with the server\'s spans', async () => {
  const client = new SpoolClient({ baseUrl: server.url, apiKey: server.apiKey });
  const tracer = trace.getTracer('traced-app');
  const queue = 'traced';
  const hooks = await startReceiver();
  const hook = await server.request('POST', '/api/v1/outgoing-webhooks', { body: { name: 'traced', url: `${hooks.url}/done`, events: ['job.completed'] } });
  assert.equal(hook.status, 201, hook.text);

  // The application's span is active: the SDK client sends its traceparent.
  const appSpan = tracer.startSpan('place order', { kind: SpanKind.INTERNAL });
  const { id } = await context.with(trace.setSpan(context.active(), appSpan), () => client.jobs.create({ queueName: queue, payload: { n: 1 } }));
  appSpan.end();
  const appContext = appSpan.spanContext();

  // The job stores the server's enqueue span, a child of the application's.
  const stored = await client.jobs.get(id);
  assert.match(stored.traceparent ?? '', new RegExp(`^00-${appContext.traceId}-[0-9a-f]{16}-01$`));
  const storedSpanId = stored.traceparent!.slice(36, 52);
  assert.notEqual(storedSpanId, appContext.spanId, 'the server participates: the stored parent-id is its own span');

  const attempts: string[] = [];
  const worker = new Worker<{ n: number }>(client, { queue, waitMs: 1000, cancelStream: false });
  worker.on('error', () => {});
  worker.handle(async (job) => {
    const active = trace.getSpanContext(context.active());
    attempts.push(active?.spanId ?? 'none');
    // The handler's own spans nest under the process span.
    tracer.startSpan('charge card').end();
    if (job.retryCount === 0) throw new Error('card declined, try again');
    return { ok: true };
  });
  await worker.start();
  await waitFor('the retried job to complete', async () => (await client.jobs.get(id)).status === 'completed');
  await worker.stop();
  const [delivery] = await hooks.waitFor(1, 30_000);
  await hooks.close();
  const sentTraceparent = String(delivery!.headers.traceparent ?? '');
  assert.match(sentTraceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'the webhook request carries its span\'s traceparent');
  await provider.forceFlush();
  // Stopping the server exports what its batch processor still holds.
  await server.close();
  server = null as unknown as TestServer;

  const spans = receiver.spans;
  const ours = spans.filter((span) => span.traceId === appContext.traceId);

  // The server's spans (its own provider and resource).
  const send = ours.find((span) => span.service === 'spool-under-test' && span.name === `send ${queue}`);
  assert.ok(send, `no server send span among ${JSON.stringify(spans.map((s) => `${s.service}:${s.name}`))}`);
  assert.equal(send.kind, 4, 'producer');
  assert.equal(send.parentSpanId, appContext.spanId, 'the enqueue span is a child of the incoming traceparent');
  assert.equal(send.spanId, storedSpanId, 'the job stores the enqueue span as its creation context');
  assert.equal(send.attributes['messaging.message.id'], id);
  assert.equal(send.attributes['messaging.destination.name'], queue);
  const serverSpans = spans.filter((span) => span.service === 'spool-under-test');
  for (const name of [`receive ${queue}`, `fail ${queue}`, `complete ${queue}`]) {
    const span = serverSpans.find((s) => s.name === name && s.links.some((link) => link.spanId === storedSpanId));
    assert.ok(span, `no server span "${name}" linked to the job's context among ${JSON.stringify(serverSpans.map((s) => s.name))}`);
    assert.equal(span.links.find((link) => link.spanId === storedSpanId)!.traceId, appContext.traceId);
  }

  // The webhook delivery: a client span linked to the job's context, whose context the receiver got.
  const post = serverSpans.find((span) => span.name === 'POST' && span.spanId === sentTraceparent.slice(36, 52));
  assert.ok(post, 'no webhook delivery span');
  assert.equal(post.kind, 3, 'client');
  assert.deepEqual(post.links.map((link) => link.spanId), [storedSpanId]);
  assert.equal(post.attributes['spool.webhook.event'], 'job.completed');

  // The worker's spans: one process span per attempt, child of and linked to the creation context.
  const processes = ours.filter((span) => span.service === 'traced-app' && span.name === `process ${queue}`);
  assert.equal(processes.length, 2, 'a retry is a new span');
  assert.deepEqual(processes.map((span) => span.attributes['spool.job.attempt']).sort(), [1, 2]);
  for (const span of processes) {
    assert.equal(span.kind, 5, 'consumer');
    assert.equal(span.parentSpanId, storedSpanId);
    assert.deepEqual(span.links.map((link) => [link.traceId, link.spanId]), [[appContext.traceId, storedSpanId]]);
    assert.equal(span.attributes['messaging.message.id'], id);
    assert.equal(span.attributes['messaging.operation.type'], 'process');
  }
  const failed = processes.find((span) => span.attributes['spool.job.attempt'] === 1)!;
  assert.equal(failed.status.code, 2, 'the failed attempt is an error');
  assert.deepEqual(processes.map((span) => span.spanId).sort(), [...attempts].sort(), 'the handler ran with its process span active');
  const charges = ours.filter((span) => span.name === 'charge card');
  assert.deepEqual(charges.map((span) => span.parentSpanId).sort(), [...attempts].sort());
});
