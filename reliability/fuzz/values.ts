import fc from 'fast-check';

/**
 * JSON values from a route's JSON schema: valid ones (to get past
 * validation and reach the handlers and SQL) and boundary ones (each
 * constraint ±1, wrong types, huge and deep values, characters PostgreSQL
 * or JavaScript mishandle). `Raw` carries JSON text JSON.stringify cannot
 * produce (1e309, -0, 10,000 levels of nesting), spliced in by `toJsonText`.
 */
export type Schema = Record<string, unknown>;

export class Raw {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may contain `Raw` pieces. */
export function toJsonText(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : toJsonText(v))).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Ids and queue names the server knows, picked at request time (the pool grows as the fuzz creates objects). */
export interface Known {
  /** An id the server returned; with `resource` ("jobs", "workers" …) preferably one of that kind. */
  id(pick: number, resource?: string): string;
  queue(pick: number): string;
}

/** A value resolved against `Known` when the request is built. */
export class Pick {
  constructor(readonly kind: 'uuid' | 'name', readonly index: number, readonly resource?: string) {}
}

/** Which kind of object a field or path parameter names: `job_id` → jobs, `worker_id` → workers. */
export function resourceOfKey(key: string): string | undefined {
  const m = /^(job|worker|schedule|workflow|webhook|delivery|lease|api_key)_ids?$/.exec(key) ?? /^(depends)_on/.exec(key);
  if (!m) return undefined;
  return ({ job: 'jobs', depends: 'jobs', worker: 'workers', schedule: 'schedules', workflow: 'workflows', webhook: 'outgoing-webhooks', delivery: 'outgoing-webhooks', lease: 'jobs', api_key: 'api-keys' } as Record<string, string>)[m[1]!];
}

/**
 * Values known to be valid for fields whose format a generator cannot guess
 * (a cron expression, a time zone, an event name), so creation routes succeed
 * and give the fuzz real objects to aim at.
 */
export const KNOWN_GOOD: Record<string, unknown[]> = {
  cron_expression: ['*/5 * * * *', '0 0 1 1 *', '0 */2 * * * *', '@daily'],
  timezone: ['UTC', 'Europe/Paris', 'America/New_York'],
  url: ['http://127.0.0.1:9/hook', 'https://example.com/hook'],
  events: [['job.completed'], ['job.created', 'job.failed']],
  slug: ['fuzz-org-a', 'fuzz-org-b'],
  billing_email: ['ada@example.com'],
  email: ['ada@example.com'],
};

export function resolvePicks(value: unknown, known: Known): unknown {
  if (value instanceof Pick) return value.kind === 'uuid' ? known.id(value.index, value.resource) : known.queue(value.index);
  if (value instanceof Raw) return value;
  if (Array.isArray(value)) return value.map((v) => resolvePicks(v, known));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolvePicks(v, known)]));
  return value;
}

const DEPTH = 10_000;
export const DEEP_ARRAY = new Raw(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`);
export const DEEP_OBJECT = new Raw(`${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`);
export const HUGE_ARRAY = new Raw(`[${'1,'.repeat(200_000)}1]`);
export const HUGE_STRING = 'x'.repeat(1_100_000);

/** Strings that have broken parsers, databases and routers before. */
export const NASTY_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udc00x', 'x\ud83d', '\ufeff', '\u202e', 'é', '日本語', '🎉'.repeat(50), 'Ω≈ç√',
  '..', '../../etc/passwd', '%00', '%ZZ', "'; DROP TABLE spool.jobs; --", '<script>alert(1)</script>', '${jndi:x}', '{{7*7}}',
  'null', 'undefined', 'NaN', 'Infinity', '-0', '1e309', 'true', '[]', '{}', '__proto__', 'constructor',
  '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', '\r\n', '\t', '*', 'a'.repeat(256), 'a'.repeat(10_000),
  '2026-02-30T25:61:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '+275760-09-13T00:00:00.000Z', '-271821-04-20T00:00:00Z', '1970-01-01T00:00:00Z',
];

/** Numbers at the edges of JSON, JavaScript and PostgreSQL (int4, int8, float8). */
export const NASTY_NUMBERS: unknown[] = [
  0, -1, 1, 0.5, -0.5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, -(2 ** 63), 2 ** 64, 1e308, -1e308, 5e-324,
  new Raw('1e309'), new Raw('-1e309'), new Raw('-0'), new Raw('1e-400'), new Raw('123456789012345678901234567890'), new Raw('0.1e1'), 'NaN', '5',
];

const WRONG_TYPES: unknown[] = [null, true, false, 0, 1.5, '', 'string', [], [1], {}, { a: 1 }];

const typesOf = (schema: Schema): string[] => (Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : []);

interface Options {
  /** A Pick for fields that name an id or a queue, or null. */
  kindOf(key: string): 'uuid' | 'name' | null;
}

/** Values valid for `schema` (as far as a generator can tell: patterns and formats are honoured). */
export function validValue(schema: unknown, options: Options, key = '', depth = 0): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object') return fc.jsonValue({ maxDepth: 2 });
  const s = schema as Schema;
  const kind = options.kindOf(key);
  const pick = kind ? fc.nat().map((n) => new Pick(kind, n, resourceOfKey(key))) : null;
  if ('const' in s) return fc.constant(s.const);
  const good = KNOWN_GOOD[key];
  if (good && depth > 0) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: validValue(s, options, '', depth) });
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (Array.isArray(branches) && branches.length > 0) return fc.oneof(...branches.map((b) => validValue(b, options, key, depth)));
  const types = typesOf(s);
  if (types.length > 1) return fc.oneof(...types.map((type) => validValue({ ...s, type }, options, key, depth)));
  switch (types[0]) {
    case 'string': {
      if (pick && (s.type === 'string')) return fc.oneof({ weight: 3, arbitrary: pick }, { weight: 1, arbitrary: validString(s) });
      return validString(s);
    }
    case 'integer':
      return fc.integer({ min: typeof s.minimum === 'number' ? Math.max(s.minimum, -1e6) : -1000, max: typeof s.maximum === 'number' ? Math.min(s.maximum, 1e6) : 1000 });
    case 'number':
      return fc.double({ min: typeof s.minimum === 'number' ? s.minimum : -1e6, max: typeof s.maximum === 'number' ? s.maximum : 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 0;
      const max = Math.max(min, Math.min(typeof s.maxItems === 'number' ? s.maxItems : 4, 4));
      const items = pick && (s.items as Schema | undefined)?.type === 'string' ? fc.oneof(pick, validValue(s.items, options, '', depth + 1)) : validValue(s.items, options, '', depth + 1);
      return fc.array(items, { minLength: min, maxLength: max });
    }
    case 'object':
    default: {
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      if (Object.keys(properties).length === 0 || depth > 3) return depth > 3 ? fc.constant({}) : fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
      const required = (s.required ?? []) as string[];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(properties)) model[name] = validValue(property, options, name, depth + 1);
      return fc.record(model, { requiredKeys: required.filter((r) => r in properties) });
    }
  }
}

function validString(s: Schema): fc.Arbitrary<string> {
  const minLength = typeof s.minLength === 'number' ? s.minLength : 0;
  const maxLength = Math.max(minLength, Math.min(typeof s.maxLength === 'number' ? s.maxLength : 40, 40));
  const fits = (v: string) => v.length >= minLength && (typeof s.maxLength !== 'number' || v.length <= s.maxLength);
  switch (s.format) {
    case 'date-time':
      return fc.integer({ min: -3_600_000, max: 365 * 86_400_000 }).map((offset) => new Date(Date.now() + offset).toISOString());
    case 'uuid':
      return fc.uuid();
    case 'uri':
    case 'url':
      return fc.constantFrom('https://example.com/hook', 'http://127.0.0.1:1/x', 'https://hooks.example.org/a?b=c');
    case 'email':
      return fc.constantFrom('ada@example.com', 'a.b+c@example.org');
    default:
      break;
  }
  if (typeof s.pattern === 'string') {
    try {
      return fc.stringMatching(new RegExp(s.pattern)).filter(fits);
    } catch {
      // A pattern fast-check cannot invert: fall through to plain strings.
    }
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme-ascii' });
}

/** Values at and past every edge of `schema`, plus values of every wrong type. */
export function boundaryValue(schema: unknown, options: Options, key = '', depth = 0): fc.Arbitrary<unknown> {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Schema;
  const edges: unknown[] = [...WRONG_TYPES, ...NASTY_NUMBERS];
  const strings: unknown[] = [...NASTY_STRINGS];
  const types = typesOf(s);
  if (types.includes('string') || Array.isArray(s.enum)) {
    for (const bound of [s.minLength, s.maxLength]) {
      if (typeof bound !== 'number') continue;
      for (const length of [bound - 1, bound, bound + 1]) if (length >= 0 && length < 2_000_000) strings.push('a'.repeat(length), 'é'.repeat(length));
    }
    if (Array.isArray(s.enum)) strings.push(...s.enum.map((e) => String(e).toUpperCase()), ...s.enum.map((e) => ` ${String(e)}`));
  }
  if (types.includes('integer') || types.includes('number')) {
    for (const bound of [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum]) {
      if (typeof bound === 'number') edges.push(bound - 1, bound, bound + 1, bound + 0.5, String(bound));
    }
  }
  if (types.includes('array')) {
    const item = validValue(s.items, options, '', depth + 1);
    const sized = (n: number) => fc.array(item, { minLength: n, maxLength: n });
    const arrays: fc.Arbitrary<unknown>[] = [fc.constant(HUGE_ARRAY), fc.array(boundaryValue(s.items, options, '', depth + 1), { minLength: 1, maxLength: 3 })];
    for (const bound of [s.minItems, s.maxItems]) if (typeof bound === 'number') for (const n of [bound - 1, bound + 1]) if (n >= 0 && n <= 10_000) arrays.push(sized(n));
    return fc.oneof(fc.constantFrom(...edges, ...strings), ...arrays);
  }
  const others: fc.Arbitrary<unknown>[] = [fc.constantFrom(DEEP_ARRAY, DEEP_OBJECT, HUGE_STRING)];
  if ((types.includes('object') || s.properties) && depth < 3) others.push(mutatedObject(s, options, depth + 1));
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...strings) },
    { weight: 4, arbitrary: fc.constantFrom(...edges) },
    { weight: 1, arbitrary: fc.oneof(...others) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
    { weight: 1, arbitrary: validValue(s, options, key, depth) },
  );
}

/**
 * A valid object with one thing wrong: a field set to a boundary value, a
 * required field missing, or extra fields (prototype keys included).
 */
export function mutatedObject(schema: Schema, options: Options, depth = 0): fc.Arbitrary<unknown> {
  const properties = Object.keys((schema.properties ?? {}) as Record<string, unknown>);
  const required = ((schema.required ?? []) as string[]).filter((r) => properties.includes(r));
  const base = validValue(schema, options, '', depth) as fc.Arbitrary<Record<string, unknown>>;
  const mutations: fc.Arbitrary<Record<string, unknown>>[] = [
    fc.tuple(base, fc.dictionary(fc.constantFrom('extra', '__proto__', 'constructor', 'prototype', 'organization_id', 'id', 'status', 'lease_id', '', 'x'.repeat(300)), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 }))
      .map(([value, extra]) => ({ ...value, ...extra })),
  ];
  if (properties.length > 0) {
    const properties_ = (schema.properties ?? {}) as Record<string, Schema>;
    mutations.push(
      fc.tuple(base, fc.constantFrom(...properties)).chain(([value, name]) =>
        boundaryValue(properties_[name], options, name, depth).map((bad) => ({ ...value, [name]: bad }))),
    );
  }
  if (required.length > 0) {
    mutations.push(fc.tuple(base, fc.constantFrom(...required)).map(([value, name]) => {
      const copy = { ...value };
      delete copy[name];
      return copy;
    }));
  }
  return fc.oneof(...mutations);
}
