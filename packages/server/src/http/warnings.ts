import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '@spool/protocol';

/**
 * What Spool ignored or changed in a request that it still answers, said in
 * `Warning: 299 - "<text>"` headers (RFC 7234's warn-code 299, "miscellaneous
 * persistent warning"; the form Kubernetes uses for the same purpose), one
 * header value per warning. The contract wants these requests answered as
 * before (an invalid `status` filter ignored, an out-of-range `limit`
 * clamped, unknown fields ignored), so the answer stays the same and only
 * the header says what happened. docs/jobs-api.md, "Warnings".
 */
export function addWarning(reply: FastifyReply, text: string): void {
  const value = `299 - "${headerText(text)}"`;
  const existing = reply.getHeader('warning');
  const values = existing === undefined ? [] : Array.isArray(existing) ? existing.map(String) : [String(existing)];
  reply.header('warning', [...values, value]);
}

/** Header values are Latin-1 and quoted: anything a client sent is shown as printable ASCII, short. */
function headerText(text: string): string {
  const clean = text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, "'");
  return clean.length > 300 ? `${clean.slice(0, 297)}...` : clean;
}

function shown(value: string): string {
  return value.length > 40 ? `${value.slice(0, 37)}...` : value;
}

/**
 * A contract list parameter (`limit`, `offset`): clamped into [min, max],
 * unreadable or absent → `fallback`, as the contract requires; a changed
 * value is named in a warning.
 */
export function contractInt(reply: FastifyReply, name: string, raw: string | number | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) {
    addWarning(reply, `${name}=${shown(String(raw))} ignored: not a number; used ${fallback}`);
    return fallback;
  }
  const used = Math.min(max, Math.max(min, Math.trunc(value)));
  if (used !== value) addWarning(reply, `${name}=${shown(String(raw))} ${Number.isInteger(value) ? 'clamped' : 'changed'} to ${used} (${min}..${max})`);
  return used;
}

/** A contract filter with a fixed set of values: an unknown one is ignored (the contract) and named in a warning. */
export function contractChoice<T extends string>(reply: FastifyReply, name: string, raw: string | undefined, allowed: readonly T[], instead = 'not filtered by it'): T | null {
  if (raw === undefined || raw === '') return null;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  addWarning(reply, `${name}=${shown(raw)} ignored (not one of ${allowed.join(', ')}): ${instead}`);
  return null;
}

/**
 * A parameter of Spool's own (an extension): nothing to stay compatible
 * with, so a value outside its range is a 400 that says what is accepted.
 */
export function extensionInt(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${name} must be an integer from ${min} to ${max} (got "${shown(raw)}"); leave it out for ${fallback}`, { field: name });
  }
  return value;
}

type Schema = Record<string, unknown>;

/** The names an object schema declares, or null when it takes any (a free-form blob such as `payload` or `tags`). */
function declared(schema: Schema): Map<string, Schema> | null {
  const branches = Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : Array.isArray(schema.oneOf) ? (schema.oneOf as Schema[]) : [schema];
  const names = new Map<string, Schema>();
  let objects = 0;
  for (const branch of branches) {
    if (branch.type !== 'object') continue;
    if (!branch.properties || branch.patternProperties || (branch.additionalProperties !== undefined && branch.additionalProperties !== false)) return null;
    objects++;
    for (const [name, sub] of Object.entries(branch.properties as Record<string, Schema>)) names.set(name, sub);
  }
  return objects > 0 ? names : null;
}

function itemsOf(schema: Schema): Schema | null {
  const branches = Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : [schema];
  const array = branches.find((branch) => branch.type === 'array' && branch.items && typeof branch.items === 'object');
  return array ? (array.items as Schema) : null;
}

/** Fields of `value` its schema does not declare, as paths (`delay`, `jobs[2].delay`). */
export function unknownFields(schema: Schema, value: unknown, path = '', out: string[] = []): string[] {
  if (Array.isArray(value)) {
    const items = itemsOf(schema);
    if (items) value.forEach((item, index) => unknownFields(items, item, `${path}[${index}]`, out));
    return out;
  }
  if (value === null || typeof value !== 'object') return out;
  const names = declared(schema);
  if (!names) return out;
  for (const [key, sub] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    const known = names.get(key);
    if (!known) out.push(at);
    else unknownFields(known, sub, at, out);
  }
  return out;
}

/** Names ignored fields in a warning (several calls for one request each add their own). */
export function warnUnknownFields(reply: FastifyReply, ignored: string[], what = 'field'): void {
  if (ignored.length > 0) addWarning(reply, `unknown ${what}${ignored.length > 1 ? 's' : ''} ignored: ${listed(ignored)}`);
}

function listed(names: string[]): string {
  const first = names.slice(0, 8).map(shown).join(', ');
  return names.length > 8 ? `${first} and ${names.length - 8} more` : first;
}

/**
 * Unknown body fields and query parameters are ignored, as the contract
 * says, and named in a warning; never a 400: the official SDKs may send
 * fields this server does not know (a newer SDK, another backend's
 * extension), and refusing them would break working clients. Only routes
 * whose schema declares the part are checked.
 */
export function installUnknownFieldWarnings(app: FastifyInstance): void {
  const known = new Map<string, { body: Schema | null; querystring: Schema | null }>();
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { body?: Schema; querystring?: Schema } | undefined;
    const entry = { body: schema?.body ?? null, querystring: schema?.querystring ?? null };
    if (!entry.body && !entry.querystring) return;
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) known.set(`${method} ${route.url}`, entry);
  });
  app.addHook('preValidation', async (request: FastifyRequest, reply: FastifyReply) => {
    const entry = known.get(`${request.method} ${request.routeOptions.url}`);
    if (!entry) return;
    if (entry.querystring) warnUnknownFields(reply, unknownFields(entry.querystring, request.query), 'query parameter');
    if (entry.body) warnUnknownFields(reply, unknownFields(entry.body, request.body));
  });
}
