/**
 * OpenTelemetry for the SDK, through `@opentelemetry/api` only: an optional
 * peer dependency. Without the package nothing here does anything; with it
 * but no tracer provider registered by the application, the API itself is
 * a no-op. The API keeps its registrations on a global, so the copy loaded
 * here sees the provider the application registered through its own import.
 *
 * Job spans follow the OpenTelemetry messaging conventions: each run of a
 * handler is a `process <queue>` consumer span whose parent is the job's
 * creation context (the traceparent it was enqueued with; one message, so
 * the conventions allow it) and which links to that context too (which the
 * conventions ask of every consumer span). A retry runs in a new span with
 * the same parent and link: one trace holds every attempt.
 */
import { createRequire } from 'node:module';
import type * as OtelApi from '@opentelemetry/api';

type Api = typeof OtelApi;

let loaded: Api | null | undefined;

function otel(): Api | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@opentelemetry/api') as Api;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const SDK_VERSION = '0.1.0';

export type TraceHeaders = {
  traceparent: string;
  tracestate?: string;
};

/** The active span's context as W3C `traceparent`/`tracestate`, or null outside a (valid) span. */
export function activeTraceHeaders(): TraceHeaders | null {
  const api = otel();
  if (!api) return null;
  const context = api.trace.getSpanContext(api.context.active());
  if (!context || !api.trace.isSpanContextValid(context)) return null;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const headers: TraceHeaders = { traceparent: `00-${context.traceId}-${context.spanId}-${flags}` };
  const state = context.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

function remoteContext(api: Api, traceparent: unknown, tracestate: unknown): OtelApi.SpanContext | null {
  if (typeof traceparent !== 'string') return null;
  const match = TRACEPARENT.exec(traceparent);
  if (!match) return null;
  const context: OtelApi.SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  if (typeof tracestate === 'string' && tracestate !== '') context.traceState = api.createTraceState(tracestate);
  return api.trace.isSpanContextValid(context) ? context : null;
}

/** The span of one handler run. */
export interface JobSpan {
  /** Runs `fn` with the span active, so the handler's own spans are its children. */
  run<T>(fn: () => T): T;
  end(outcome: { error?: unknown; retryable?: boolean }): void;
}

const NO_SPAN: JobSpan = {
  run: (fn) => fn(),
  end: () => {},
};

/** Starts the `process <queue>` span of one handler run. */
export function startJobSpan(job: { id: string; queueName: string; retryCount?: number; traceparent?: unknown; tracestate?: unknown }, workerId: string): JobSpan {
  const api = otel();
  if (!api) return NO_SPAN;
  const creation = remoteContext(api, job.traceparent, job.tracestate);
  const tracer = api.trace.getTracer('@spool/sdk', SDK_VERSION);
  const parent = creation ? api.trace.setSpanContext(api.ROOT_CONTEXT, creation) : api.ROOT_CONTEXT;
  const span = tracer.startSpan(`process ${job.queueName}`, {
    kind: api.SpanKind.CONSUMER,
    root: creation === null,
    links: creation ? [{ context: creation }] : [],
    attributes: {
      'messaging.system': 'spool',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': job.queueName,
      'messaging.message.id': job.id,
      'messaging.client.id': workerId,
      'spool.job.attempt': (job.retryCount ?? 0) + 1,
    },
  }, parent);
  const active = api.trace.setSpan(api.ROOT_CONTEXT, span);
  return {
    run: (fn) => api.context.with(active, fn),
    end({ error, retryable }) {
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
        if (retryable !== undefined) span.setAttribute('spool.job.retryable', retryable);
      }
      span.end();
    },
  };
}
