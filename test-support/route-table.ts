import { sampleFor } from './schema-sample.js';

/**
 * Reading the server's route table (`RunningSpool.routes`, filled by
 * app.ts's onRoute hook): the tenant-isolation matrix and the fuzzer both
 * walk it, so a route added later is covered by both without edits.
 */
export interface Route {
  method: string;
  url: string;
  schema: Record<string, unknown> | undefined;
  /** The authorization operation of an authenticated route. */
  operation?: string;
}

/** What a path parameter or body field names: an object id or a queue name. */
export type Kind = 'uuid' | 'name';

/** Body/query fields that carry a queue name or an id. */
export const kindOfKey = (key: string): Kind | null =>
  /^queue(_name)?s?$/.test(key) ? 'name' : /(^|_)ids?$|depends/.test(key) ? 'uuid' : null;
/** Path parameters: `:name` is a queue name, everything else an id. */
export const kindOfParam = (param: string): Kind => (/name/.test(param) ? 'name' : 'uuid');
/** `/jobs/:id/x/:job_id` → ['id', 'job_id']. */
export const pathParams = (url: string): string[] => [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
/** The JSON REST API: /api/v1 routes with the usual verbs (not HEAD copies or the UI). */
export const isApiRoute = (r: Route): boolean => r.url.startsWith('/api/v1/') && ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method);

/** The kinds of value (ids, queue names) a route takes in its path, query string or body. */
export function slotsOf(route: Route): Set<Kind> {
  const kinds = new Set<Kind>(pathParams(route.url).map(kindOfParam));
  for (const part of ['querystring', 'body'] as const) {
    const properties = (route.schema?.[part] as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
    for (const key of Object.keys(properties)) {
      const kind = kindOfKey(key);
      if (kind) kinds.add(kind);
    }
  }
  return kinds;
}

/** A request for `route` with `values[kind]` in every slot of that kind (path, query string, body). */
export function requestFor(route: Route, values: Record<Kind, string>): { path: string; body?: unknown } {
  let path = route.url;
  for (const param of pathParams(route.url)) path = path.replace(`:${param}`, encodeURIComponent(values[kindOfParam(param)]));
  const fill = (key: string, schema: Record<string, unknown>) => {
    const kind = kindOfKey(key);
    if (!kind) return undefined;
    return schema.type === 'array' ? [values[kind]] : values[kind];
  };
  const query = sampleFor(route.schema?.querystring ?? { type: 'object' }, fill) as Record<string, unknown>;
  const search = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)])).toString();
  if (search) path += `?${search}`;
  const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : sampleFor(route.schema?.body ?? { type: 'object' }, fill);
  return { path, body };
}

export interface RouteCall { status: number; contentType: string; text: string; body: any }

/** Calls a route with an API key; an event stream is read for 300 ms, then hung up. */
export async function callRoute(baseUrl: string, method: string, path: string, apiKey: string, body?: unknown): Promise<RouteCall> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  const contentType = response.headers.get('content-type') ?? '';
  let text = '';
  if (contentType.includes('text/event-stream')) {
    const reader = response.body!.getReader();
    const deadline = Date.now() + 300;
    while (Date.now() < deadline) {
      const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
      if (!next || next.done) break;
      text += Buffer.from(next.value).toString();
    }
    await reader.cancel().catch(() => {});
  } else text = await response.text();
  let parsed: unknown = text;
  if (contentType.includes('application/json') && text) parsed = JSON.parse(text);
  return { status: response.status, contentType: contentType.split(';')[0]!, text, body: parsed };
}

/**
 * The sums of a time series' numeric fields over its points, leaving out
 * the bucket times and `volatile` keys: a series (GET /stats/timeseries)
 * moves its buckets when a minute passes, so two equivalent calls compare by
 * their totals.
 */
export function seriesTotals(points: unknown[], volatile: RegExp): Record<string, number> {
  const out: Record<string, number> = {};
  for (const point of points) {
    for (const [key, value] of Object.entries(point as Record<string, unknown>)) {
      if (typeof value === 'number' && !volatile.test(key)) out[key] = (out[key] ?? 0) + value;
    }
  }
  return out;
}
