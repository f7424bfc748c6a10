/**
 * Key conversion between the snake_case wire (docs/compatibility.md §1.2) and the
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
  // A workflow job's on_parent_failure may be keyed by the user's own job keys
  // (or, in answers, job ids): those keys must not be renamed.
  'on_parent_failure',
]);

/**
 * Remembers a key conversion. The wire's keys are a small fixed set, and a
 * worker converts every key of every claimed job: the regexes showed up as a
 * quarter of a no-op worker's CPU (docs/performance.md). Keys that are data
 * (e.g. queue names in a stats map) stop being remembered past the bound.
 */
function remembered(rename: (key: string) => string, max = 2048): (key: string) => string {
  const known = new Map<string, string>();
  return (key) => {
    let renamed = known.get(key);
    if (renamed === undefined) {
      renamed = rename(key);
      if (known.size < max) known.set(key, renamed);
    }
    return renamed;
  };
}

/** `completedJobs24h` → `completed_jobs_24h`; `leaseId` → `lease_id`. */
export const toSnakeKey = remembered((key) => key
  .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
  .replace(/([A-Za-z])(\d)/g, '$1_$2')
  .toLowerCase());

/** `completed_jobs_24h` → `completedJobs24h`; `lease_id` → `leaseId`. */
export const toCamelKey = remembered((key) => key.replace(/_([a-z0-9])/g, (_, ch: string) => ch.toUpperCase()));

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function convert(value: unknown, rename: (key: string) => string, direction: 'out' | 'in'): unknown {
  if (Array.isArray(value)) return value.map((item) => convert(item, rename, direction));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const inner = value[key];
    // Undefined means "not given": drop it so the server applies its default.
    if (inner === undefined) continue;
    const renamed = rename(key);
    const wireKey = direction === 'out' ? renamed : key;
    out[renamed] = VERBATIM_WIRE_KEYS.has(wireKey) ? inner : convert(inner, rename, direction);
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
