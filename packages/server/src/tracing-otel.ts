/**
 * The OpenTelemetry side of tracing.ts, imported only when an OTLP endpoint
 * is configured. The provider is this server's own, not registered
 * globally: an application that embeds Spool keeps its own tracer
 * provider, and Spool's spans never go through it.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import { jobTraceContexts, type JobTraceContext, type Queryable } from '@spool/engine';
import { parseTraceparent, type TraceContext } from '@spool/protocol';
import { errorFields } from './log-fields.js';
import { MAX_SPAN_LINKS, type ServerSpan, type ServerTracing, type SpanAttributes, type SpanKindName, type SpanSpec } from './tracing.js';

const KINDS: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

/** An export failure is logged at most this often (a collector that is down fails every batch). */
const EXPORT_WARN_EVERY_MS = 60_000;

function spanContextOf(value: TraceContext): Context | null {
  const parsed = parseTraceparent(value.traceparent);
  if (!parsed.ok) return null;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parsed.value.traceId,
    spanId: parsed.value.spanId,
    traceFlags: parsed.value.flags,
    isRemote: true,
    traceState: value.tracestate ? createTraceState(value.tracestate) : undefined,
  });
}

function attributesOf(attributes: SpanAttributes | undefined): Attributes | undefined {
  if (!attributes) return undefined;
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

function toTraceContext(span: Span): TraceContext {
  const context = span.spanContext();
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const state = context.traceState?.serialize();
  return { traceparent: `00-${context.traceId}-${context.spanId}-${flags}`, tracestate: state ? state : null };
}

class OtelSpan implements ServerSpan {
  readonly #span: Span;
  #context: TraceContext | null = null;

  constructor(span: Span) {
    this.#span = span;
  }

  get context(): TraceContext {
    return (this.#context ??= toTraceContext(this.#span));
  }

  setAttributes(attributes: SpanAttributes): void {
    const set = attributesOf(attributes);
    if (set) this.#span.setAttributes(set);
  }

  end(error?: unknown): void {
    if (error !== undefined) {
      this.#span.recordException(error instanceof Error ? error : String(error));
      this.#span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      this.#span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : 'Error');
    }
    this.#span.end();
  }
}

/** Passes spans on to the OTLP exporter and says in the server's log when a batch could not be sent. */
class LoggingExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #logger: Logger;
  readonly #url: string;
  #warnedAt = 0;

  constructor(inner: SpanExporter, logger: Logger, url: string) {
    this.#inner = inner;
    this.#logger = logger;
    this.#url = url;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.#inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && Date.now() - this.#warnedAt >= EXPORT_WARN_EVERY_MS) {
        this.#warnedAt = Date.now();
        this.#logger.warn({ endpoint: this.#url, spans: spans.length, error: result.error ? errorFields(result.error) : undefined }, 'could not export spans over OTLP (logged at most once a minute)');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

class OtelTracing implements ServerTracing {
  readonly #provider: BasicTracerProvider;
  readonly #tracer: Tracer;

  constructor(provider: BasicTracerProvider, version: string) {
    this.#provider = provider;
    this.#tracer = provider.getTracer('@spool/server', version);
  }

  start(spec: SpanSpec): ServerSpan {
    const parent = spec.parent ? spanContextOf(spec.parent) : null;
    const links: Link[] = [];
    for (const link of spec.links ?? []) {
      if (links.length >= MAX_SPAN_LINKS) break;
      const linked = spanContextOf(link.context);
      const context = linked ? trace.getSpanContext(linked) : undefined;
      if (context) links.push({ context, attributes: attributesOf(link.attributes) });
    }
    const span = this.#tracer.startSpan(spec.name, {
      kind: KINDS[spec.kind],
      attributes: attributesOf(spec.attributes),
      links,
      startTime: spec.startTime,
      // A span without a parent roots a new trace even if something else set an active context.
      root: parent === null,
    }, parent ?? ROOT_CONTEXT);
    return new OtelSpan(span);
  }

  jobContexts(db: Queryable, organizationId: string, ids: readonly string[]): Promise<Map<string, JobTraceContext>> {
    return jobTraceContexts(db, organizationId, ids);
  }

  shutdown(): Promise<void> {
    return this.#provider.shutdown();
  }
}

export function createOtelTracing(options: { url: string; serviceName: string; version: string; logger: Logger }): ServerTracing {
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName, [ATTR_SERVICE_VERSION]: options.version }));
  // Headers, timeout, compression and the batch sizes come from the standard OTEL_* variables.
  const exporter = new LoggingExporter(new OTLPTraceExporter({ url: options.url }), options.logger, options.url);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  return new OtelTracing(provider, options.version);
}
