import { randomUUID } from 'node:crypto';

/**
 * A UUIDv7: 48 bits of Unix milliseconds, then random bits. Time-ordered ids
 * keep inserts at the right edge of the primary-key index instead of
 * scattering them (random v4 ids touch a random leaf page per insert).
 * Clients treat ids as opaque strings, so the version is ours to choose.
 */
export function uuidv7(now: number = Date.now()): string {
  // randomUUID draws from a cached entropy pool (randomBytes(16) was a
  // syscall-backed allocation per id: ~3 µs, a visible share of a bulk
  // enqueue). Its v4 layout already has the RFC 9562 variant bits; keep its
  // 74 random bits and put the timestamp and version 7 in front.
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any string may arrive as an id; only well-formed UUIDs can name a row. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

/**
 * The one spelling of an id: a UUID-shaped string in lower case (how
 * PostgreSQL prints a uuid), anything else unchanged. PostgreSQL reads
 * `ABC…` and `abc…` as the same uuid, but ids are also compared as text (a
 * lease against the job's, a result against its item), so an id is
 * canonicalized where it enters: REST requests and gRPC calls
 * (packages/server/src/http/canonical-ids.ts).
 */
export function canonicalId<T>(value: T): T {
  return (isUuid(value) ? value.toLowerCase() : value) as T;
}
