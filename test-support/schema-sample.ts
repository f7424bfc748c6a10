/**
 * Minimal values that satisfy a route's JSON schema, so a test can call any
 * route (including ones added later) with a body that gets past validation.
 * Only required properties are filled; `override(key)` may supply a value for
 * any property it recognizes (required or not).
 */
type Schema = Record<string, unknown>;

const STRING_CANDIDATES = ['sample', 'x', 'a1', 'sample-1', 'sample_1', 'Sample', '1', 'sample.1'];

function sampleString(schema: Schema): string {
  if (Array.isArray(schema.enum)) return String(schema.enum[0]);
  switch (schema.format) {
    case 'date-time':
      return new Date(Date.now() + 3_600_000).toISOString();
    case 'uri':
    case 'url':
      return 'https://example.com/hook';
    case 'email':
      return 'user@example.com';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    default:
      break;
  }
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : null;
  for (const candidate of STRING_CANDIDATES) {
    const padded = candidate.length >= min ? candidate : candidate + 'a'.repeat(min - candidate.length);
    if (!pattern || pattern.test(padded)) return padded;
  }
  return 'sample';
}

function sampleNumber(schema: Schema): number {
  let value = 1;
  if (typeof schema.minimum === 'number' && value < schema.minimum) value = schema.minimum;
  if (typeof schema.maximum === 'number' && value > schema.maximum) value = schema.maximum;
  return value;
}

/** A value valid for `schema`; `override(key, schema)` returns undefined to fall back to sampling. */
export function sampleFor(schema: unknown, override: (key: string, schema: Schema) => unknown = () => undefined): unknown {
  if (!schema || typeof schema !== 'object') return {};
  const s = schema as Schema;
  if ('const' in s) return s.const;
  const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (Array.isArray(branches)) return sampleFor(branches.find((b) => b.type !== 'null') ?? branches[0], override);
  switch (s.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set((s.required ?? []) as string[]);
      for (const [key, property] of Object.entries(properties)) {
        const forced = override(key, property);
        if (forced !== undefined) out[key] = forced;
        else if (required.has(key)) out[key] = sampleFor(property, override);
      }
      return out;
    }
    case 'string':
      return sampleString(s);
    case 'integer':
    case 'number':
      return sampleNumber(s);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const count = typeof s.minItems === 'number' ? s.minItems : 0;
      return Array.from({ length: count }, () => sampleFor(s.items, override));
    }
    default:
      return {};
  }
}
