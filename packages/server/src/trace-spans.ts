/**
 * The server's spans of the job lifecycle, named and attributed after the
 * OpenTelemetry messaging conventions (`{operation} {queue}`,
 * messaging.* attributes; the messaging names are still incubating in
 * @opentelemetry/semantic-conventions, so they are spelled out here).
 * Callers reach these only through a non-null `ctx.tracing`.
 */
import type { Queryable } from '@spool/engine';
import type { TraceContext } from '@spool/protocol';
import { MAX_SPAN_LINKS, type ServerSpan, type ServerTracing, type SpanAttributes } from './tracing.js';

export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';
export const ATTR_MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';
export const ATTR_MESSAGING_CLIENT_ID = 'messaging.client.id';
/** `messaging.system` of every Spool span (the conventions allow a system's own name). */
export const MESSAGING_SYSTEM = 'spool';
export const ATTR_ORGANIZATION = 'spool.organization.id';

function messaging(type: string, name: string, queue: string | undefined, organizationId: string, extra: SpanAttributes = {}): SpanAttributes {
  return {
    [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM,
    [ATTR_MESSAGING_OPERATION_TYPE]: type,
    [ATTR_MESSAGING_OPERATION_NAME]: name,
    [ATTR_MESSAGING_DESTINATION_NAME]: queue,
    [ATTR_ORGANIZATION]: organizationId,
    ...extra,
  };
}

/**
 * One job's enqueue: a producer span, child of the enqueuer's context. The
 * job stores this span's context (its creation context), so its workers'
 * spans descend from the server's.
 */
export function startEnqueueSpan(tracing: ServerTracing, queue: string, organizationId: string, parent: TraceContext | null, transport: 'http' | 'grpc'): ServerSpan {
  return tracing.start({
    name: `send ${queue}`,
    kind: 'producer',
    parent,
    attributes: messaging('send', 'enqueue', queue, organizationId, { 'spool.transport': transport }),
  });
}

/** A bulk enqueue: one producer span, child of the request's context, linked to each item's own context. */
export function startBulkEnqueueSpan(tracing: ServerTracing, queue: string, organizationId: string, parent: TraceContext | null, items: readonly TraceContext[], count: number): ServerSpan {
  return tracing.start({
    name: `send ${queue}`,
    kind: 'producer',
    parent,
    links: items.slice(0, MAX_SPAN_LINKS).map((context) => ({ context })),
    attributes: messaging('send', 'enqueue_bulk', queue, organizationId, { [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: count }),
  });
}

/** A claim that answered: one span from its start, linked to each claimed job's stored context. */
export function recordClaimSpan(
  tracing: ServerTracing,
  spec: { queue: string; organizationId: string; workerId: string; parent: TraceContext | null; startTime: number; jobs: readonly { id: string; traceparent: string | null; tracestate: string | null }[]; error?: unknown },
): void {
  const links: { context: TraceContext; attributes: SpanAttributes }[] = [];
  for (const job of spec.jobs) {
    if (job.traceparent) links.push({ context: { traceparent: job.traceparent, tracestate: job.tracestate }, attributes: { [ATTR_MESSAGING_MESSAGE_ID]: job.id } });
  }
  const span = tracing.start({
    name: `receive ${spec.queue}`,
    kind: 'server',
    parent: spec.parent,
    links,
    startTime: spec.startTime,
    attributes: messaging('receive', 'claim', spec.queue, spec.organizationId, {
      [ATTR_MESSAGING_CLIENT_ID]: spec.workerId,
      [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: spec.jobs.length,
    }),
  });
  span.end(spec.error);
}

export interface SettleTrace {
  /** Records the span once the operation answered: `succeeded` of the items took effect. */
  end(succeeded: number, error?: unknown): void;
}

/** `work`, ending `trace` with its error if it fails; without a trace, `work` itself (no closure, no extra promise). */
export function endOnFailure<T>(work: Promise<T>, trace: SettleTrace | null): Promise<T> {
  if (trace === null) return work;
  return work.catch((err: unknown) => {
    trace.end(0, err);
    throw err;
  });
}

/**
 * A complete or fail (one job or a batch). The jobs' queues and stored
 * contexts are read beside the operation (their statements do not return
 * them), and the span is recorded once both are in, off the response path.
 */
export function startSettleTrace(
  tracing: ServerTracing,
  db: Queryable,
  spec: { operation: 'complete' | 'fail'; organizationId: string; workerId: string; ids: readonly string[]; parent: TraceContext | null },
): SettleTrace {
  const startTime = Date.now();
  const jobs = tracing.jobContexts(db, spec.organizationId, spec.ids).catch(() => new Map());
  return {
    end(succeeded, error) {
      void jobs.then((found) => {
        const queues = new Set<string>();
        const links: { context: TraceContext; attributes: SpanAttributes }[] = [];
        for (const [id, job] of found) {
          queues.add(job.queueName);
          if (job.trace) links.push({ context: job.trace, attributes: { [ATTR_MESSAGING_MESSAGE_ID]: id } });
        }
        const queue = queues.size === 1 ? [...queues][0] : undefined;
        const span = tracing.start({
          name: queue ? `${spec.operation} ${queue}` : spec.operation,
          kind: 'server',
          parent: spec.parent,
          links,
          startTime,
          attributes: messaging('settle', spec.operation, queue, spec.organizationId, {
            [ATTR_MESSAGING_CLIENT_ID]: spec.workerId,
            [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: spec.ids.length,
            [ATTR_MESSAGING_MESSAGE_ID]: spec.ids.length === 1 ? spec.ids[0] : undefined,
            'spool.settled_count': succeeded,
          }),
        });
        span.end(error);
      });
    },
  };
}
