/**
 * Key conversion between the snake_case wire (CONTRACT §1.2) and the
 * camelCase API. Values under the "blob" keys are user JSON and travel
 * byte-for-byte: their own keys are never rewritten.
 */

/** Wire keys whose values are user data, passed through verbatim in both directions. */
export const VERBATIM_WIRE_KEYS: ReadonlySet<string> = new Set([
  'payload',
  'result',
  'metadata',
  'tags',
  'settings',
  'details',
  'extra',
  'payload_template',
  'custom_limits',
]);

/** `completedJobs24h` → `completed_jobs_24h`; `leaseId` → `lease_id`. */
export function toSnakeKey(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Za-z])(\d)/g, '$1_$2')
    .toLowerCase();
}

/** `completed_jobs_24h` → `completedJobs24h`; `lease_id` → `leaseId`. */
export function toCamelKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, ch: string) => ch.toUpperCase());
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function convert(value: unknown, rename: (key: string) => string, direction: 'out' | 'in'): unknown {
  if (Array.isArray(value)) return value.map((item) => convert(item, rename, direction));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // Undefined means "not given": drop it so the server applies its default.
    if (inner === undefined) continue;
    const wireKey = direction === 'out' ? toSnakeKey(key) : key;
    out[rename(key)] = VERBATIM_WIRE_KEYS.has(wireKey) ? inner : convert(inner, rename, direction);
  }
  return out;
}

/** camelCase request object → snake_case wire body (recursively, blobs untouched, undefined dropped). */
export function toWire(value: unknown): unknown {
  return convert(value, toSnakeKey, 'out');
}

/** snake_case wire body → camelCase object (recursively, blobs untouched). */
export function fromWire<T>(value: unknown): T {
  return convert(value, toCamelKey, 'in') as T;
}
