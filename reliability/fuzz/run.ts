import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { Db } from '@spool/engine';
import type { Route } from '../../test-support/route-table.js';
import { responseProblems } from './contract.js';
import { sendRaw, type RawRequest, type RawResponse } from './raw-http.js';
import { build, planArbitrary, type Plan, type Target } from './requests.js';
import { resourceOfKey } from './values.js';

/**
 * The fuzz loop shared by `npm run fuzz` and the fast variant in `npm test`:
 * fast-check generates requests against every route of the server's route
 * table, each answer is checked against the contract, and afterwards the
 * database must pass the consistency query and the process must have seen
 * no unhandled rejection or uncaught exception.
 */
export interface FuzzServer {
  url: string;
  routes: Route[];
  db: Db;
  apiKey: string;
  organizationId: string;
  adminKey: string;
  githubSecret: string;
  stripeSecret: string;
  /** Error-level log lines of the server so far (shown beside failures). */
  errorLogs?: () => string[];
}

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** Requests sent at once per fast-check run (default 1: a reproducible sequence). */
  concurrency?: number;
  /** Stop at the first failing request and let fast-check shrink it. */
  shrink?: boolean;
  progress?: (done: number, total: number) => void;
}

export interface Failure {
  run: number;
  route: string;
  problems: string[];
  request: string;
  response: string;
  logs: string[];
}

export interface FuzzReport {
  seed: number;
  runs: number;
  routes: number;
  routesHit: number;
  /** Routes that answered at least one generated request with a 2xx (the generator got past validation). */
  routesOk: number;
  /** The others: where the generator never got a request accepted (worth better samples). */
  routesNever2xx: string[];
  statuses: Record<string, number>;
  failures: Failure[];
  /** Distinct (route, problem) pairs among the failures. */
  distinct: string[];
  inconsistencies: { problem: string; subject: string }[];
  processErrors: string[];
  durationMs: number;
}

const CONSISTENCY_SQL = readFileSync(new URL('./consistency.sql', import.meta.url), 'utf8');
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const UUID_ONLY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const QUEUE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
const HOLD_OPEN = /^\/api\/v1\/(events|ws|jobs\/claim)/;

/** Violations of the database invariants (reliability/fuzz/consistency.sql); [] when consistent. */
export async function consistencyViolations(db: Db): Promise<{ problem: string; subject: string }[]> {
  return (await db.query<{ problem: string; subject: string }>(CONSISTENCY_SQL)).rows;
}

/** Everything the routes of this server can be fuzzed with: the JSON API, health, metrics, docs and the UI. */
export function fuzzableRoutes(routes: Route[]): Route[] {
  const seen = new Set<string>();
  return routes.filter((r) => {
    const key = `${r.method} ${r.url}`;
    if (seen.has(key) || r.method === 'OPTIONS') return false;
    seen.add(key);
    return true;
  });
}

function describeRequest(request: RawRequest): string {
  const body = request.body ? request.body.subarray(0, 300).toString('utf8') + (request.body.length > 300 ? `… (${request.body.length} bytes)` : '') : '';
  const headers = request.headers.map(([n, v]) => `${n}: ${v.length > 120 ? `${v.slice(0, 120)}… (${v.length})` : v}`).join('\n');
  const target = request.target.length > 300 ? `${request.target.slice(0, 300)}… (${request.target.length} chars)` : request.target;
  return `${request.method} ${target}${request.chunked ? ' [chunked]' : ''}\n${headers}\n\n${body}`;
}

function describeResponse(response: RawResponse): string {
  if (response.timedOut) return 'timed out';
  if (response.reset) return 'connection closed';
  return `${response.status} ${response.headers['content-type'] ?? ''}\n${response.body.subarray(0, 500).toString('utf8')}`;
}

/** Collects what the process reports that it should never report. */
function watchProcess(): { errors: string[]; stop(): void } {
  const errors: string[] = [];
  const onRejection = (reason: unknown) => errors.push(`unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
  const onException = (err: Error) => errors.push(`uncaught exception: ${err.stack}`);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return {
    errors,
    stop() {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    },
  };
}

async function api(server: FuzzServer, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Credentials, and a pool of ids and queue names that grows with every answer. */
async function prepareTarget(server: FuzzServer): Promise<{ target: Target; harvest(text: string, label?: string): void; refresh(label: string): Promise<void> }> {
  const protectedIds = new Set<string>([server.organizationId.toLowerCase()]);
  const ids: string[] = [];
  const idSet = new Set<string>();
  const pools = new Map<string, string[]>();
  const queues = ['fuzz-queue', 'fuzz-other'];
  const remember = (id: string, resource: string | undefined) => {
    const lower = id.toLowerCase();
    if (protectedIds.has(lower)) return;
    if (!idSet.has(lower) && ids.length < 5000) {
      idSet.add(lower);
      ids.push(lower);
    }
    if (!resource) return;
    const pool = pools.get(resource) ?? [];
    if (!pool.includes(lower) && pool.length < 500) pool.push(lower);
    pools.set(resource, pool);
  };
  // `id` fields belong to the resource of the route that answered; `job_id`, `worker_id` … to theirs.
  const walk = (value: unknown, resource: string | undefined, key = ''): void => {
    if (typeof value === 'string') {
      if (UUID_ONLY.test(value)) remember(value, key === 'id' ? resource : resourceOfKey(key));
      else for (const id of value.match(UUID) ?? []) remember(id, undefined);
      if (key === 'queue_name' && QUEUE_NAME.test(value) && !queues.includes(value) && queues.length < 500) queues.push(value);
    } else if (Array.isArray(value)) value.forEach((v) => walk(v, resource, key));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, resource, k);
  };
  const harvest = (text: string, label = '') => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    const segments = label.replace(/^[A-Z]+ \/api\/v1\//, '').split('/');
    walk(parsed, segments[0] === 'admin' ? segments[1] : segments[0]);
  };
  const login = async () => api(server, 'POST', '/api/v1/auth/login', { api_key: server.apiKey }) as Promise<{ access_token: string; refresh_token: string }>;
  let tokens = await login();
  const me = await api(server, 'GET', '/api/v1/auth/me', undefined).catch(() => null);
  if (me?.api_key_id) protectedIds.add(String(me.api_key_id).toLowerCase());
  const keyRow = await server.db.query<{ id: string }>("SELECT id::text FROM spool.api_keys WHERE organization_id = $1", [server.organizationId]);
  for (const row of keyRow.rows) protectedIds.add(row.id);
  let webhookToken: string | null = null;
  const readWebhookToken = async () => {
    const row = await server.db.query<{ token: string | null }>("SELECT settings->>'webhook_token' AS token FROM spool.organizations WHERE id = $1", [server.organizationId]);
    webhookToken = row.rows[0]?.token ?? null;
  };

  // Something of every kind to aim ids at; more is created by the fuzz itself.
  const job = await api(server, 'POST', '/api/v1/jobs', { queue_name: 'fuzz-queue', payload: { n: 1 } });
  await api(server, 'POST', '/api/v1/jobs', { queue_name: 'fuzz-queue', payload: { n: 2 }, max_retries: 0 });
  const claimed = await api(server, 'POST', '/api/v1/jobs/claim', { queue_name: 'fuzz-queue', worker_id: 'fuzz-worker', limit: 1 });
  harvest(JSON.stringify([job, claimed]), 'POST /api/v1/jobs');
  const attempts = [
    ['POST', '/api/v1/workers/register', { queue_name: 'fuzz-queue', hostname: 'fuzz-host' }],
    ['POST', '/api/v1/schedules', { name: 'fuzz-schedule', cron_expression: '0 0 1 1 *', queue_name: 'fuzz-queue', payload_template: {} }],
    ['POST', '/api/v1/workflows', { name: 'fuzz-workflow', jobs: [{ key: 'a', queue_name: 'fuzz-queue', payload: {} }, { key: 'b', queue_name: 'fuzz-queue', payload: {}, depends_on: ['a'] }] }],
    ['POST', '/api/v1/outgoing-webhooks', { name: 'fuzz-hook', url: 'http://127.0.0.1:9/hook', events: ['job.completed'] }],
    ['POST', '/api/v1/api-keys', { name: 'fuzz key' }],
    ['POST', '/api/v1/organizations/webhook-token/regenerate', undefined],
    // Deliveries are verified with the organization's own secrets (the server-wide ones apply only to a lone organization).
    ['PUT', '/api/v1/organizations/webhook-secrets/github', { secret: server.githubSecret }],
    ['PUT', '/api/v1/organizations/webhook-secrets/stripe', { secret: server.stripeSecret }],
  ] as const;
  for (const [method, path, body] of attempts) harvest(JSON.stringify(await api(server, method, path, body).catch(() => null)), `${method} ${path}`);
  for (const path of ['/api/v1/jobs', '/api/v1/workers', '/api/v1/schedules', '/api/v1/workflows', '/api/v1/outgoing-webhooks', '/api/v1/api-keys']) harvest(JSON.stringify(await api(server, 'GET', path).catch(() => null)), `GET ${path}`);
  await readWebhookToken();

  const target: Target = {
    apiKey: server.apiKey,
    accessToken: () => tokens.access_token,
    refreshToken: () => tokens.refresh_token,
    adminKey: server.adminKey,
    organizationId: server.organizationId,
    webhookToken: () => webhookToken,
    githubSecret: server.githubSecret,
    stripeSecret: server.stripeSecret,
    // Mostly an id of the kind the route wants; sometimes any id (another kind's id must be a 404 too).
    id: (pick, resource) => {
      const pool = resource ? pools.get(resource) : undefined;
      const from = pool?.length && pick % 5 !== 0 ? pool : ids;
      return from[Math.floor(pick / 5) % from.length] ?? '00000000-0000-4000-8000-000000000000';
    },
    queue: (pick) => queues[pick % queues.length]!,
  };
  return {
    target,
    harvest,
    // Some calls change the fuzzer's own credentials (logout revokes its token, regenerate replaces the webhook token).
    async refresh(label: string) {
      if (label.includes('/auth/logout') || label.includes('/auth/refresh')) tokens = await login();
      if (label.includes('webhook-token')) await readWebhookToken();
      if (label.includes('webhook-secrets')) {
        await api(server, 'PUT', '/api/v1/organizations/webhook-secrets/github', { secret: server.githubSecret }).catch(() => null);
        await api(server, 'PUT', '/api/v1/organizations/webhook-secrets/stripe', { secret: server.stripeSecret }).catch(() => null);
      }
    },
  };
}

export async function runFuzz(server: FuzzServer, options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const routes = fuzzableRoutes(server.routes);
  const { hostname, port } = new URL(server.url);
  const watcher = watchProcess();
  const failures: Failure[] = [];
  const statuses: Record<string, number> = {};
  const hit = new Set<number>();
  const ok = new Set<number>();
  let run = 0;
  try {
    const { target, harvest, refresh } = await prepareTarget(server);
    const execute = async (plan: Plan): Promise<boolean> => {
      run += 1;
      const request = build(plan, routes, target);
      const path = request.target.split('?')[0]!;
      const logsBefore = server.errorLogs?.().length ?? 0;
      const response = await sendRaw(hostname, Number(port), request, HOLD_OPEN.test(path) ? 600 : 15_000);
      hit.add(plan.route);
      const bucket = response.timedOut ? 'timeout' : response.reset ? 'reset' : String(response.status);
      statuses[bucket] = (statuses[bucket] ?? 0) + 1;
      if (response.status >= 200 && response.status < 300) {
        ok.add(plan.route);
        harvest(response.body.toString('utf8'), request.label);
      }
      if (response.status < 500) await refresh(request.label).catch(() => {});
      options.progress?.(run, options.runs);
      const problems = responseProblems(request, response);
      if (problems.length === 0) return true;
      failures.push({
        run,
        route: request.label,
        problems,
        request: describeRequest(request),
        response: describeResponse(response),
        logs: (server.errorLogs?.() ?? []).slice(logsBefore),
      });
      return !options.shrink;
    };
    // With concurrency > 1 each fast-check run is a batch of requests sent at
    // once (races between them on the same objects are the point).
    const concurrency = Math.max(1, options.concurrency ?? 1);
    const property = fc.asyncProperty(fc.array(planArbitrary(routes), { minLength: concurrency, maxLength: concurrency }), async (plans: Plan[]) => {
      const results = await Promise.all(plans.map(execute));
      return results.every(Boolean);
    });
    await fc.assert(property, { numRuns: Math.ceil(options.runs / concurrency), seed: options.seed, endOnFailure: !options.shrink });
  } catch (err) {
    if (!options.shrink) throw err;
    watcher.errors.push(`shrunk counterexample: ${(err as Error).message}`);
  } finally {
    // Give anything the last requests started (batched enqueues, webhooks) a moment to fail loudly.
    await new Promise((r) => setTimeout(r, 300));
    watcher.stop();
  }
  const live = await fetch(`${server.url}/health/live`).then((r) => r.status, (err) => `unreachable: ${err}`);
  if (live !== 200) watcher.errors.push(`GET /health/live after the fuzz: ${live}`);
  const inconsistencies = await consistencyViolations(server.db);
  const distinct = [...new Set(failures.flatMap((f) => f.problems.map((p) => `${f.route}: ${p}`)))];
  return {
    seed: options.seed,
    runs: run,
    routes: routes.length,
    routesHit: hit.size,
    routesOk: ok.size,
    routesNever2xx: routes.filter((_, i) => !ok.has(i)).map((r) => `${r.method} ${r.url}`),
    statuses,
    failures,
    distinct,
    inconsistencies,
    processErrors: watcher.errors,
    durationMs: Date.now() - started,
  };
}

/** A multi-line human summary of a report (the CLI prints it; tests put it in assertion messages). */
export function formatReport(report: FuzzReport, maxFailures = 20, verbose = false): string {
  const lines = [
    `fuzz: seed=${report.seed} runs=${report.runs} routes=${report.routesHit}/${report.routes} routes_2xx=${report.routesOk} failures=${report.failures.length} distinct=${report.distinct.length} inconsistencies=${report.inconsistencies.length} process_errors=${report.processErrors.length} duration=${(report.durationMs / 1000).toFixed(1)}s`,
    `statuses: ${Object.entries(report.statuses).sort().map(([s, n]) => `${s}=${n}`).join(' ')}`,
  ];
  if (verbose) lines.push(`never 2xx: ${report.routesNever2xx.join(', ')}`);
  for (const d of report.distinct) lines.push(`  distinct: ${d}`);
  const shown = new Set<string>();
  for (const failure of report.failures) {
    const key = `${failure.route} ${failure.problems.join()}`;
    if (shown.has(key) || shown.size >= maxFailures) continue;
    shown.add(key);
    lines.push(`--- run ${failure.run}: ${failure.route}: ${failure.problems.join('; ')}`, failure.request, '>>>', failure.response);
    for (const log of failure.logs.slice(0, 3)) lines.push(`log: ${log.slice(0, 2000)}`);
  }
  for (const i of report.inconsistencies.slice(0, 20)) lines.push(`  inconsistent: ${i.problem} (${i.subject})`);
  for (const e of report.processErrors) lines.push(`  process: ${e}`);
  return lines.join('\n');
}
