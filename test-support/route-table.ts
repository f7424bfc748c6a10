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
