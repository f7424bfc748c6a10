/**
 * The server's own spans (docs/observability.md, Tracing). `startTracing`
 * answers null unless an OTLP endpoint is configured, and only then loads
 * the OpenTelemetry SDK: with tracing off no OpenTelemetry module is even
 * imported, and every call site is a `ctx.tracing` null check.
 */
import type { Logger } from 'pino';
import type { TraceContext } from '@spool/protocol';
import type { JobTraceContext, Queryable } from '@spool/engine';
import type { Config } from './config.js';

export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanSpec {
  name: string;
  kind: SpanKindName;
  /** The caller's context (a request's traceparent); null starts a new trace. */
  parent: TraceContext | null;
  /** Contexts this span relates to without descending from them (jobs' stored contexts), with per-link attributes. */
  links?: { context: TraceContext; attributes?: SpanAttributes }[];
  attributes?: SpanAttributes;
  /** Epoch milliseconds, for a span started after the fact (a claim's links are known only once it answered). */
  startTime?: number;
}

export interface ServerSpan {
  /** The span's own context as W3C values: what a job created under it stores. */
  readonly context: TraceContext;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span; an error marks it failed and is recorded as an exception. */
  end(error?: unknown): void;
}

export interface ServerTracing {
  start(spec: SpanSpec): ServerSpan;
  /** Queues and stored trace contexts of jobs by id (one indexed read), for spans of statements that do not return them. */
  jobContexts(db: Queryable, organizationId: string, ids: readonly string[]): Promise<Map<string, JobTraceContext>>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Most links a span gets (the OpenTelemetry SDK's default link limit). */
export const MAX_SPAN_LINKS = 128;

export async function startTracing(config: Config, logger: Logger, version: string): Promise<ServerTracing | null> {
  if (!config.otlpTracesUrl) return null;
  const { createOtelTracing } = await import('./tracing-otel.js');
  const tracing = createOtelTracing({ url: config.otlpTracesUrl, serviceName: config.otelServiceName, version, logger });
  logger.info({ endpoint: config.otlpTracesUrl, serviceName: config.otelServiceName }, 'exporting traces over OTLP/HTTP');
  return tracing;
}
