import { LIMITS, ValidationError, type JobStatus } from '@spool/protocol';
import type { JobRow } from '@spool/engine';

/*
 * Messages as proto-loader hands them to the server (keepCase, enums and
 * longs as strings, defaults filled in, oneofs named). The server loads the
 * proto with keepCase so these mirror spooled.proto field for field; clients
 * choose their own casing, the bytes on the wire are the same.
 */

/** google.protobuf.Timestamp. */
export interface ProtoTimestamp {
  seconds: string | number;
  nanos: number;
}

/**
 * google.protobuf.Value with its `kind` oneof. The well-known types come from
 * protobufjs's bundled descriptors, whose field names are camelCase whatever
 * `keepCase` says.
 */
export interface ProtoValue {
  kind?: string;
  nullValue?: string | number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: ProtoStruct | null;
  listValue?: { values?: ProtoValue[] } | null;
}

/** google.protobuf.Struct. */
export interface ProtoStruct {
  fields?: Record<string, ProtoValue>;
}

/** spooled.v1.Job. */
export interface ProtoJob {
  id: string;
  organization_id: string;
  queue_name: string;
  status: string;
  payload: ProtoStruct | null;
  result: ProtoStruct | null;
  retry_count: number;
  max_retries: number;
  last_error: string;
  priority: number;
  timeout_seconds: number;
  created_at: ProtoTimestamp | null;
  scheduled_at: ProtoTimestamp | null;
  started_at: ProtoTimestamp | null;
  completed_at: ProtoTimestamp | null;
  lease_expires_at: ProtoTimestamp | null;
  assigned_worker_id: string;
  idempotency_key: string;
  lease_id: string;
}

// Deeper documents are refused rather than risking the stack. Each JSON level is two
// protobuf levels (a Value holding a Struct or ListValue): the same limit as REST bodies.
const MAX_DEPTH = 2 * LIMITS.jsonDepthMax;

/** JSON value → google.protobuf.Value. Non-finite numbers are not JSON; they become null. */
export function toProtoValue(value: unknown): ProtoValue {
  if (value === null || value === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'number') return Number.isFinite(value) ? { numberValue: value } : { nullValue: 'NULL_VALUE' };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map((item) => toProtoValue(item)) } };
  if (typeof value === 'object') return { structValue: toProtoStruct(value as Record<string, unknown>) };
  return { nullValue: 'NULL_VALUE' };
}

/** JSON object → google.protobuf.Struct. */
export function toProtoStruct(object: Record<string, unknown>): ProtoStruct {
  const fields: Record<string, ProtoValue> = {};
  for (const [key, value] of Object.entries(object)) fields[key] = toProtoValue(value);
  return { fields };
}

/**
 * A stored payload or result as a Struct. A Struct can only hold an object,
 * but REST accepts any JSON value: a non-object is wrapped as `{ "value": x }`
 * so a gRPC worker still receives the data; null stays unset.
 */
export function jsonToStruct(value: unknown): ProtoStruct | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'object' && !Array.isArray(value)) return toProtoStruct(value as Record<string, unknown>);
  return toProtoStruct({ value });
}

function valueKind(value: ProtoValue): string | undefined {
  if (value.kind) return value.kind;
  for (const key of ['structValue', 'listValue', 'stringValue', 'numberValue', 'boolValue', 'nullValue'] as const) {
    if (value[key] !== undefined && value[key] !== null) return key;
  }
  return undefined;
}

/** google.protobuf.Value → JSON value. */
export function fromProtoValue(value: ProtoValue | null | undefined, field: string, depth = 0): unknown {
  if (depth > MAX_DEPTH) throw new ValidationError(`${field} is nested more than ${LIMITS.jsonDepthMax} levels deep`, { field });
  if (!value) return null;
  switch (valueKind(value)) {
    case 'numberValue':
      // A double may be NaN or ±Infinity, which JSON cannot hold: stored, it would become null.
      if (!Number.isFinite(value.numberValue)) {
        throw new ValidationError(`${field} holds a number that is NaN or infinite, which JSON cannot store; send it as a string`, { field });
      }
      return value.numberValue;
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'structValue':
      return structToJson(value.structValue ?? {}, field, depth + 1);
    case 'listValue':
      return (value.listValue?.values ?? []).map((item) => fromProtoValue(item, field, depth + 1));
    default:
      return null;
  }
}

/** google.protobuf.Struct → JSON object (keys exactly as sent). */
export function structToJson(struct: ProtoStruct, field: string, depth = 0): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw new ValidationError(`${field} is nested more than ${LIMITS.jsonDepthMax} levels deep`, { field });
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(struct.fields ?? {})) out[key] = fromProtoValue(value, field, depth + 1);
  return out;
}

/** Date → Timestamp (seconds as a string: int64). */
export function toTimestamp(date: Date | null): ProtoTimestamp | null {
  if (date === null) return null;
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1_000_000 };
}

/** Timestamp → Date, or null when unset. Out-of-range values are a validation error naming the field. */
export function fromTimestamp(ts: ProtoTimestamp | null | undefined, field: string): Date | null {
  if (!ts) return null;
  const seconds = Number(ts.seconds ?? 0);
  const nanos = Number(ts.nanos ?? 0);
  const date = new Date(seconds * 1000 + Math.floor(nanos / 1_000_000));
  if (!Number.isFinite(seconds) || Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) {
    throw new ValidationError(`${field} is not a valid timestamp`, { field });
  }
  return date;
}

/** "processing" → "JOB_STATUS_PROCESSING". */
export function toProtoStatus(status: JobStatus): string {
  return `JOB_STATUS_${status.toUpperCase()}`;
}

/** A job row as a spooled.v1.Job; unset strings are "" (proto3 has no null strings). */
export function jobToProto(row: JobRow): ProtoJob {
  return {
    id: row.id,
    organization_id: row.organization_id,
    queue_name: row.queue_name,
    status: toProtoStatus(row.status),
    payload: jsonToStruct(row.payload),
    result: jsonToStruct(row.result),
    retry_count: row.retry_count,
    max_retries: row.max_retries,
    last_error: row.last_error ?? '',
    priority: row.priority,
    timeout_seconds: row.timeout_seconds,
    created_at: toTimestamp(row.created_at),
    scheduled_at: toTimestamp(row.scheduled_at),
    started_at: toTimestamp(row.started_at),
    completed_at: toTimestamp(row.completed_at),
    lease_expires_at: toTimestamp(row.lease_expires_at),
    assigned_worker_id: row.assigned_worker_id ?? '',
    idempotency_key: row.idempotency_key ?? '',
    lease_id: row.lease_id ?? '',
  };
}
