import { randomBytes } from 'node:crypto';

/**
 * A UUIDv7: 48 bits of Unix milliseconds, then random bits. Time-ordered ids
 * keep inserts at the right edge of the primary-key index instead of
 * scattering them (random v4 ids touch a random leaf page per insert).
 * Clients treat ids as opaque strings, so the version is ours to choose.
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any string may arrive as an id; only well-formed UUIDs can name a row. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}
