import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { kindOfKey, kindOfParam, pathParams, type Route } from '../../test-support/route-table.js';
import type { RawRequest } from './raw-http.js';
import { boundaryValue, DEEP_ARRAY, DEEP_OBJECT, HUGE_ARRAY, mutatedObject, NASTY_STRINGS, Raw, resolvePicks, resourceOfKey, toJsonText, validValue, type Known, type Schema } from './values.js';

/**
 * One generated request, as plain data (so fast-check can print and shrink
 * it): the route and what to put in each part. `build` turns it into bytes,
 * resolving picks against the ids and queue names the server knows by then.
 */
export interface Plan {
  route: number;
  params: ParamPlan[];
  query: QueryPlan;
  body: BodyPlan;
  contentType: string | null;
  auth: AuthPlan;
  headers: [string, string][];
  chunked: boolean;
  pathSuffix: string;
}

type ParamPlan = { kind: 'known'; pick: number } | { kind: 'fresh'; value: string } | { kind: 'junk'; value: string; encode: boolean };
type QueryPlan = { kind: 'valid'; values: Record<string, unknown> } | { kind: 'raw'; text: string };
type BodyPlan = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'text'; text: string } | { kind: 'bytes'; hex: string };
type AuthPlan = 'key' | 'jwt' | 'none' | 'junk' | 'basic' | 'refresh' | 'tampered' | 'alg-none' | 'lowercase' | 'huge' | 'twice';

/** Credentials and ids of the fuzzed server, read when a request is built. */
export interface Target extends Known {
  apiKey: string;
  accessToken(): string;
  refreshToken(): string;
  adminKey: string;
  organizationId: string;
  webhookToken(): string | null;
  githubSecret: string;
  stripeSecret: string;
}

const JUNK_IDS = [
  ...NASTY_STRINGS.filter((s) => s.length > 0 && s.length < 20_000),
  '..', '.', '%2e%2e', '%2F', '%2f..%2f', '%00', '%ZZ', '%', '%E0%A4%A', '%C0%AE', '%u002e', 'a%20b', '+', '%2B', '~', ';', ',', '?', '#',
];

const CONTENT_TYPES: (string | null)[] = [
  null, '', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream',
  'application/json; charset=utf-16', 'application/json; charset=latin1', 'APPLICATION/JSON', 'application/jsonp', 'application/vnd.api+json',
  '*/*', 'application/json, text/plain', 'application/json;', 'application/json; charset=utf-8; x=' + 'y'.repeat(200), 'text/event-stream', 'application/xml',
];

const ODD_HEADERS: [string, string][] = [
  ['X-Request-Id', 'r'.repeat(1000)], ['X-Request-Id', ''], ['X-Request-Id', '\u00ff\u00fe'], ['Accept', 'text/html'], ['Accept', 'application/xml;q=0'],
  ['Accept-Encoding', 'br'], ['Accept-Encoding', 'gzip, deflate, br, zstd, x'], ['Accept-Encoding', 'identity;q=0'], ['Content-Encoding', 'gzip'],
  ['Content-Encoding', 'br'], ['X-Forwarded-For', 'not-an-ip, ::1, 999.1.1.1'], ['X-Forwarded-Proto', 'https'], ['Last-Event-ID', 'junk'],
  ['Last-Event-ID', '-1'], ['Last-Event-ID', '9'.repeat(400)], ['If-None-Match', '*'], ['Range', 'bytes=0-1'], ['X-Admin-Key', ''],
  ['X-Admin-Key', 'wrong'], ['X-Webhook-Token', 'wrong'], ['X-Hub-Signature-256', 'sha256=00'], ['Stripe-Signature', 't=1,v1=00'],
  ['Stripe-Signature', 't=99999999999999999999,v1=zz'], ['X-GitHub-Event', '../../x'], ['X-GitHub-Delivery', 'd'.repeat(500)],
  ['Origin', 'https://evil.example'], ['Cookie', 'a=b'], ['X-HTTP-Method-Override', 'DELETE'], ['Upgrade', 'websocket'],
  ['Connection', 'keep-alive, Upgrade'], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
  ['Content-Length', '0'], ['Expect', 'x-junk'], ['X-Api-Key', 'sk_test_junk'], ['Authorization', 'Bearer sk_live_' + 'A'.repeat(43)],
];

function pathParamPlan(kind: 'uuid' | 'name'): fc.Arbitrary<ParamPlan> {
  const fresh = kind === 'uuid' ? fc.uuid() : fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/);
  return fc.oneof(
    { weight: 6, arbitrary: fc.nat().map((pick): ParamPlan => ({ kind: 'known', pick })) },
    { weight: 2, arbitrary: fresh.map((value): ParamPlan => ({ kind: 'fresh', value })) },
    { weight: 3, arbitrary: fc.record({ value: fc.oneof(fc.constantFrom(...JUNK_IDS), fc.string({ unit: 'binary', maxLength: 40 })), encode: fc.boolean() }).map((p): ParamPlan => ({ kind: 'junk', ...p })) },
  );
}

function queryPlan(route: Route): fc.Arbitrary<QueryPlan> {
  const schema = (route.schema?.querystring ?? { type: 'object' }) as Schema;
  const options = { kindOf: kindOfKey };
  const rawJunk = fc.constantFrom(
    '%', '%ZZ', 'a=%ZZ', '&&&=', '=', 'a[b]=c', '__proto__[x]=1', 'constructor[prototype][x]=1', 'limit=1&limit=2', 'limit=-1', 'limit=1e309',
    'offset=99999999999999999999', 'limit=NaN', 'queue_name=%00', `queue_name=${'q'.repeat(5000)}`, 'status=PENDING', 'order_by=;drop', 'a=' + 'x'.repeat(20_000),
    'token=junk', 'hard_delete=maybe', 'events=%E2%80%AE', 'x=%F0%9F%8E%89', 'a=\u00e9', 'last_event_id=-5',
  );
  return fc.oneof(
    { weight: 4, arbitrary: (validValue(schema, options) as fc.Arbitrary<Record<string, unknown>>).map((values): QueryPlan => ({ kind: 'valid', values })) },
    { weight: 3, arbitrary: mutatedObject(schema, options).map((values): QueryPlan => ({ kind: 'valid', values: values as Record<string, unknown> })) },
    { weight: 1, arbitrary: rawJunk.map((text): QueryPlan => ({ kind: 'raw', text })) },
  );
}

function bodyPlan(route: Route): fc.Arbitrary<BodyPlan> {
  const schema = route.schema?.body as Schema | undefined;
  const options = { kindOf: kindOfKey };
  const json = (arb: fc.Arbitrary<unknown>) => arb.map((value): BodyPlan => ({ kind: 'json', value }));
  const junk: fc.Arbitrary<BodyPlan>[] = [
    json(fc.jsonValue({ maxDepth: 3 })),
    json(fc.constantFrom(DEEP_ARRAY, DEEP_OBJECT, HUGE_ARRAY, null, 0, 'string', [], new Raw('1e309'), new Raw('-0'))),
    fc.constantFrom('{', '{"a":}', '{"a":1}}', 'nul', "{'a':1}", '{"a":1,"a":2}', '\ufeff{}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}',
      '{"a":"\\ud800"}', '{"a":"\\u0000"}', '[1,]', '1 2', '   ', '{"a":1}\u0000', 'NaN', 'Infinity', '{"a":NaN}').map((text): BodyPlan => ({ kind: 'text', text })),
    fc.constantFrom('7b2261223a22ff227d', '7b2261223a22eda080227d', 'c0af', 'fffe7b007d00', '00', '7b2261223a22f4908080227d').map((hex): BodyPlan => ({ kind: 'bytes', hex })),
    fc.constant<BodyPlan>({ kind: 'text', text: `{"a":"${'x'.repeat(6 * 1024 * 1024)}"}` }),
  ];
  const schemaBodies: { weight: number; arbitrary: fc.Arbitrary<BodyPlan> }[] = schema
    ? [
        { weight: 6, arbitrary: json(validValue(schema, options)) },
        { weight: 8, arbitrary: json(schema.type === 'object' || schema.properties ? mutatedObject(schema, options) : boundaryValue(schema, options)) },
      ]
    : [];
  return fc.oneof(
    ...schemaBodies,
    { weight: 1, arbitrary: fc.constant<BodyPlan>({ kind: 'none' }) },
    { weight: schema ? 3 : 6, arbitrary: fc.oneof(...junk.slice(0, 4), { weight: 1, arbitrary: junk[4]! }) },
  );
}

/** fast-check arbitrary of requests over `routes`, shaped by each route's schema. */
export function planArbitrary(routes: Route[]): fc.Arbitrary<Plan> {
  const perRoute = routes.map((route, index) =>
    fc.record({
      route: fc.constant(index),
      params: fc.tuple(...pathParams(route.url).map((p) => pathParamPlan(kindOfParam(p)))),
      query: queryPlan(route),
      body: route.method === 'GET' || route.method === 'HEAD' ? fc.oneof({ weight: 5, arbitrary: fc.constant<BodyPlan>({ kind: 'none' }) }, { weight: 1, arbitrary: bodyPlan(route) }) : bodyPlan(route),
      contentType: fc.oneof({ weight: 8, arbitrary: fc.constant<string | null>('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      auth: fc.oneof(
        { weight: 12, arbitrary: fc.constant<AuthPlan>('key') },
        { weight: 4, arbitrary: fc.constant<AuthPlan>('jwt') },
        { weight: 4, arbitrary: fc.constantFrom<AuthPlan>('none', 'junk', 'basic', 'refresh', 'tampered', 'alg-none', 'lowercase', 'huge', 'twice') },
      ),
      headers: fc.oneof({ weight: 4, arbitrary: fc.constant<[string, string][]>([]) }, { weight: 1, arbitrary: fc.subarray(ODD_HEADERS, { minLength: 1, maxLength: 3 }) }),
      chunked: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      pathSuffix: fc.oneof({ weight: 12, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/..', '/%2e%2e/', '/.', '%00', '/x', ';x=1', '#frag') }),
    }),
  );
  return fc.oneof(...perRoute);
}

/** `/api/v1/workflows/:id/jobs/:job_id`: `id` names a workflow, `job_id` a job. */
function resourceOfParam(url: string, param: string): string | undefined {
  const byKey = resourceOfKey(param);
  if (byKey) return byKey;
  const segments = url.replace(/^\/api\/v1\//, '').split('/');
  return segments[0] === 'admin' ? segments[1] : segments[0];
}

function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

function authHeaders(plan: AuthPlan, target: Target): [string, string][] {
  const access = target.accessToken();
  const [header, payload] = access.split('.');
  switch (plan) {
    case 'key':
      return [['Authorization', `Bearer ${target.apiKey}`]];
    case 'jwt':
      return [['Authorization', `Bearer ${access}`]];
    case 'none':
      return [];
    case 'junk':
      return [['Authorization', 'Bearer sk_test_not-a-key']];
    case 'basic':
      return [['Authorization', `Basic ${Buffer.from(`x:${target.apiKey}`).toString('base64')}`]];
    case 'refresh':
      return [['Authorization', `Bearer ${target.refreshToken()}`]];
    case 'tampered': {
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
      return [['Authorization', `Bearer ${header}.${b64url({ ...claims, org_id: '00000000-0000-4000-8000-000000000000', queues: ['*'] })}.${access.split('.')[2]}`]];
    }
    case 'alg-none': {
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
      return [['Authorization', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`]];
    }
    case 'lowercase':
      return [['authorization', `bearer ${target.apiKey}`]];
    case 'huge':
      return [['Authorization', `Bearer sk_test_${'A'.repeat(16_000)}`]];
    case 'twice':
      return [['Authorization', `Bearer ${target.apiKey}`], ['Authorization', 'Bearer sk_test_other']];
  }
}

function bodyBytes(body: BodyPlan, target: Target): Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json':
      return Buffer.from(toJsonText(resolvePicks(body.value, target)));
    case 'text':
      return Buffer.from(body.text);
    case 'bytes':
      return Buffer.from(body.hex, 'hex');
  }
}

/** One query value as text (objects without a prototype have no toString). */
function queryText(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (typeof value === 'object' && value !== null) return toJsonText(value);
  return String(value);
}

function queryString(query: QueryPlan, target: Target): string {
  if (query.kind === 'raw') return query.text;
  const values = resolvePicks(query.values, target) as Record<string, unknown>;
  return Object.entries(values)
    .map(([k, v]) => `${safeEncode(k)}=${safeEncode(Array.isArray(v) ? v.map(queryText).join(',') : queryText(v))}`)
    .join('&');
}

/** Percent-encodes what is not a legal request-target byte, keeping deliberate junk like `%ZZ` or `..` as is. */
function rawSegment(value: string): string {
  return [...value].map((ch) => (/[\x21-\x7e]/.test(ch) && ch !== '/' && ch !== '?' && ch !== '#' ? ch : safeEncode(ch))).join('');
}

function safeEncode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    // Lone surrogates: send their CESU-8 bytes, which no UTF-8 decoder accepts.
    return [...value].map((ch) => (/[\ud800-\udfff]/.test(ch) ? '%ED%A0%80' : encodeURIComponent(ch))).join('');
  }
}

/** The request of `plan` against `routes[plan.route]`. */
export function build(plan: Plan, routes: Route[], target: Target): RawRequest & { label: string } {
  const route = routes[plan.route]!;
  let path = route.url;
  pathParams(route.url).forEach((param, i) => {
    const p = plan.params[i]!;
    const kind = kindOfParam(param);
    let segment: string;
    if (param === 'org_id' && p.kind === 'known') segment = target.organizationId;
    else if (p.kind === 'known') segment = encodeURIComponent(kind === 'uuid' ? target.id(p.pick, resourceOfParam(route.url, param)) : target.queue(p.pick));
    else if (p.kind === 'fresh') segment = encodeURIComponent(p.value);
    else segment = p.encode ? safeEncode(p.value) : rawSegment(p.value);
    if (segment === '') segment = '%20';
    path = path.replace(`:${param}`, segment);
  });
  if (path.endsWith('*')) path = path.slice(0, -1) + (plan.params.length ? '' : 'index.html');
  path += plan.pathSuffix;
  const query = queryString(plan.query, target);
  const targetPath = query ? `${path}?${query}` : path;

  const body = route.method === 'GET' || route.method === 'HEAD' || route.method === 'DELETE' ? (plan.body.kind === 'none' ? undefined : bodyBytes(plan.body, target)) : bodyBytes(plan.body, target);
  const headers: [string, string][] = [];
  if (plan.contentType !== null && (body !== undefined || plan.contentType === 'application/json')) headers.push(['Content-Type', plan.contentType]);
  headers.push(...authHeaders(plan.auth, target));
  if (route.url.startsWith('/api/v1/admin/') && !plan.headers.some(([n]) => n.toLowerCase() === 'x-admin-key')) headers.push(['X-Admin-Key', target.adminKey]);
  if (route.url.startsWith('/api/v1/webhooks/')) {
    const token = target.webhookToken();
    if (token && !plan.headers.some(([n]) => n.toLowerCase() === 'x-webhook-token')) headers.push(['X-Webhook-Token', token]);
    const raw = body ?? Buffer.alloc(0);
    if (route.url.endsWith('/github')) headers.push(['X-Hub-Signature-256', `sha256=${createHmac('sha256', target.githubSecret).update(raw).digest('hex')}`], ['X-GitHub-Event', 'push']);
    if (route.url.endsWith('/stripe')) {
      const t = Math.floor(Date.now() / 1000);
      headers.push(['Stripe-Signature', `t=${t},v1=${createHmac('sha256', target.stripeSecret).update(Buffer.concat([Buffer.from(`${t}.`), raw])).digest('hex')}`]);
    }
  }
  headers.push(...plan.headers);
  return { method: route.method, target: targetPath, headers, body, chunked: plan.chunked && body !== undefined, label: `${route.method} ${route.url}` };
}
