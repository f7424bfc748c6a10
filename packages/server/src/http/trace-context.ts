import { readTraceContext, ValidationError, type TraceContext, type TraceContextRead } from '@spool/protocol';

const HEADER_NAMES = { traceparent: 'traceparent header', tracestate: 'tracestate header' };

/** A checked trace context, or the 400 that names the bad field. */
export function checkedTraceContext(read: TraceContextRead): TraceContext | null {
  if (!read.ok) throw new ValidationError(read.message, { field: read.field });
  return read.value;
}

/**
 * The W3C trace context an enqueue carries in its `traceparent` and
 * `tracestate` headers (HTTP headers or gRPC metadata); a malformed one is
 * a 400 with a precise message. Without them this is two property reads.
 */
export function enqueueTraceHeaders(headers: { readonly [name: string]: unknown }): TraceContext | null {
  const { traceparent, tracestate } = headers;
  if (traceparent === undefined && tracestate === undefined) return null;
  return checkedTraceContext(readTraceContext(traceparent, tracestate, HEADER_NAMES));
}

/** The same headers where they only parent the server's own spans: a malformed one is ignored, as W3C asks. */
export function parentTraceHeaders(headers: { readonly [name: string]: unknown }): TraceContext | null {
  if (headers.traceparent === undefined) return null;
  const read = readTraceContext(headers.traceparent, headers.tracestate, HEADER_NAMES);
  if (read.ok) return read.value;
  // A bad tracestate alone does not lose the parent.
  const alone = readTraceContext(headers.traceparent, undefined, HEADER_NAMES);
  return alone.ok ? alone.value : null;
}
