/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the
 * `traceparent` and `tracestate` values a job carries from its enqueuer to
 * its workers. Parsed strictly: a value Spool stores is one every tracer
 * reads back.
 */

/** Longest `tracestate` Spool keeps (the W3C's "at least 512 characters" that every vendor must propagate). */
export const TRACESTATE_MAX = 512;
const TRACESTATE_MEMBERS_MAX = 32;

export interface TraceParent {
  traceId: string;
  /** The id of the caller's span: the parent of what is created next. */
  spanId: string;
  /** Trace flags as a number (bit 0: sampled). */
  flags: number;
}

export type TraceParse = { ok: true; value: TraceParent } | { ok: false; message: string };

const HEX = /^[0-9a-f]+$/;
const EXAMPLE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function hexField(value: string, name: string, length: number, field: string): string | null {
  if (value.length !== length) return `${field}: ${name} must be ${length} hex digits (got ${value.length} characters)`;
  if (!HEX.test(value)) return /^[0-9a-fA-F]+$/.test(value) ? `${field}: ${name} must be lowercase hex` : `${field}: ${name} must be hex digits (0-9, a-f)`;
  if (/^0+$/.test(value) && name !== 'flags' && name !== 'version') return `${field}: ${name} must not be all zeros`;
  return null;
}

/**
 * Reads a `traceparent`: version-traceid-parentid-flags, lowercase hex,
 * neither id all zeros, version ff refused. Version 00 is exactly 55
 * characters; a later version may carry more fields after a dash, which
 * are dropped (the value is kept as version 00, as the spec asks of a
 * participant that knows version 00 only).
 */
export function parseTraceparent(raw: string, field = 'traceparent'): TraceParse {
  const fail = (message: string): TraceParse => ({ ok: false, message });
  if (raw.length < 55) return fail(`${field} must be version-traceid-parentid-flags, 55 characters (e.g. ${EXAMPLE}); got ${raw.length}`);
  const version = raw.slice(0, 2);
  const versionError = hexField(version, 'version', 2, field);
  if (versionError) return fail(versionError);
  if (version === 'ff') return fail(`${field}: version ff is invalid`);
  if (version === '00' && raw.length !== 55) return fail(`${field} version 00 must be exactly 55 characters (e.g. ${EXAMPLE}); got ${raw.length}`);
  if (raw.length > 55 && raw[55] !== '-') return fail(`${field}: fields after the flags must start with "-"`);
  if (raw[2] !== '-' || raw[35] !== '-' || raw[52] !== '-') return fail(`${field} must be version-traceid-parentid-flags separated by "-" (e.g. ${EXAMPLE})`);
  const traceId = raw.slice(3, 35);
  const spanId = raw.slice(36, 52);
  const flags = raw.slice(53, 55);
  const error = hexField(traceId, 'trace-id', 32, field) ?? hexField(spanId, 'parent-id', 16, field) ?? hexField(flags, 'flags', 2, field);
  if (error) return fail(error);
  return { ok: true, value: { traceId, spanId, flags: Number.parseInt(flags, 16) } };
}

/** The version 00 form of a parsed traceparent. */
export function formatTraceparent(value: TraceParent): string {
  return `00-${value.traceId}-${value.spanId}-${(value.flags & 0xff).toString(16).padStart(2, '0')}`;
}

// W3C tracestate list members: key "=" value, keys a simple or multi-tenant (tenant@system) name.
const KEY = /^(?:[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})$/;
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** Checks a `tracestate` (at most 512 characters, at most 32 key=value members); null when valid. */
export function tracestateError(raw: string, field = 'tracestate'): string | null {
  if (raw.length > TRACESTATE_MAX) return `${field} must be at most ${TRACESTATE_MAX} characters (got ${raw.length})`;
  const members = raw.split(',').map((member) => member.trim()).filter((member) => member !== '');
  if (members.length > TRACESTATE_MEMBERS_MAX) return `${field} may have at most ${TRACESTATE_MEMBERS_MAX} list members (got ${members.length})`;
  for (const member of members) {
    const eq = member.indexOf('=');
    const key = eq < 0 ? member : member.slice(0, eq);
    if (eq < 0 || !KEY.test(key)) return `${field}: "${member.slice(0, 40)}" is not a key=value list member (keys are lowercase letters, digits and _-*/, optionally tenant@system)`;
    if (!VALUE.test(member.slice(eq + 1))) return `${field}: the value of "${key}" must be 1-256 printable ASCII characters without "," or "=" and not end in a space`;
  }
  return null;
}

/** A job's trace context as it is stored and sent on. */
export interface TraceContext {
  traceparent: string;
  tracestate: string | null;
}

/** What the two values are called in messages: a body's fields, a bulk item's (`jobs[3].traceparent`) or headers. */
export interface TraceFieldNames {
  traceparent: string;
  tracestate: string;
}

export type TraceContextRead = { ok: true; value: TraceContext | null } | { ok: false; message: string; field: string };

/**
 * Checks a traceparent/tracestate pair from one source (headers, a body,
 * a bulk item). Undefined, null and '' mean absent. Returns null when
 * neither is given, or the message of the first problem.
 */
export function readTraceContext(traceparent: unknown, tracestate: unknown, names: TraceFieldNames = { traceparent: 'traceparent', tracestate: 'tracestate' }): TraceContextRead {
  const present = (value: unknown) => value !== undefined && value !== null && value !== '';
  if (!present(traceparent)) {
    if (present(tracestate)) return { ok: false, message: `${names.tracestate} needs a ${names.traceparent}`, field: names.tracestate };
    return { ok: true, value: null };
  }
  if (typeof traceparent !== 'string') return { ok: false, message: `${names.traceparent} must be a string`, field: names.traceparent };
  const parsed = parseTraceparent(traceparent, names.traceparent);
  if (!parsed.ok) return { ok: false, message: parsed.message, field: names.traceparent };
  let state: string | null = null;
  if (present(tracestate)) {
    if (typeof tracestate !== 'string') return { ok: false, message: `${names.tracestate} must be a string`, field: names.tracestate };
    const error = tracestateError(tracestate, names.tracestate);
    if (error) return { ok: false, message: error, field: names.tracestate };
    state = tracestate.trim() === '' ? null : tracestate;
  }
  return { ok: true, value: { traceparent: formatTraceparent(parsed.value), tracestate: state } };
}

/** Field names of a body or bulk item whose fields are prefixed (`jobs[3].`). */
export function traceFieldNames(prefix: string): TraceFieldNames {
  return { traceparent: `${prefix}traceparent`, tracestate: `${prefix}tracestate` };
}
