import { stat } from 'node:fs/promises';
import { join, normalize, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../app.js';
import { dashboardAssets, type DashboardAssets } from '../dashboard-assets.js';

/** Paths that belong to the server, never to the single-page app: unknown ones stay JSON 404s. */
const SERVER_PATHS = /^\/(api|health|metrics|docs)(\/|$)/;

/**
 * The app's pages (packages/dashboard/src/app.tsx, ROUTES): `/`, a section,
 * or one object in it (`/jobs/{id}`). Only these get index.html, so that a
 * probe of /healthz or /readyz is a 404 instead of a 200 with the app.
 * dashboard-ui.test.ts checks every route of the app against this list.
 */
export const DASHBOARD_SECTIONS = ['queues', 'jobs', 'dead-letters', 'schedules', 'workers', 'workflows', 'settings', 'operator'] as const;
const SECTIONS: ReadonlySet<string> = new Set(DASHBOARD_SECTIONS);

function isDashboardPage(path: string): boolean {
  const segments = path.split('/').slice(1);
  if (segments.length === 1 && segments[0] === '') return true;
  if (segments.at(-1) === '') segments.pop();
  return segments.length >= 1 && segments.length <= 2 && SECTIONS.has(segments[0]!) && segments.every((segment) => segment !== '');
}

// The app loads only its own hashed scripts and styles and talks only to
// this origin (REST and the event stream). uPlot sizes elements through
// element.style, which CSP allows; 'unsafe-inline' styles cover Preact's
// style attributes.
const HTML_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';

function waitPage(title: string, text: string, refresh: boolean): string {
  const meta = refresh ? '<meta http-equiv="refresh" content="2">' : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${meta}<title>Spool</title></head><body style="font-family:system-ui,sans-serif;padding:2rem"><h1>${title}</h1><p>${text}</p><p>The API is up: <a href="/docs">/docs</a>, <a href="/health">/health</a>.</p></body></html>`;
}

/** The file under `dir` a URL path names, or null (missing, a directory, or outside `dir`). */
async function fileFor(dir: string, urlPath: string): Promise<string | null> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.endsWith('/')) return null;
  const relative = normalize(decoded).replace(/^[/\\]+/, '');
  if (relative === '' || relative.startsWith('..') || relative.split(sep).some((part) => part.startsWith('.'))) return null;
  const full = join(dir, relative);
  if (!full.startsWith(dir + sep)) return null;
  const info = await stat(full).catch(() => null);
  return info?.isFile() ? relative : null;
}

function notFound(reply: FastifyReply): FastifyReply {
  reply.callNotFound();
  return reply;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A browser asking for a page that is not one: a plain page, not JSON (API clients still get the JSON 404). */
function notAPage(request: FastifyRequest, reply: FastifyReply, path: string): FastifyReply {
  if (!(request.headers.accept ?? '').includes('text/html')) return notFound(reply);
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found · Spool</title></head><body style="font-family:system-ui,sans-serif;padding:2rem"><h1>Not found</h1><p>There is no page at <code>${escapeHtml(path)}</code>.</p><p>The dashboard is at <a href="/">/</a>, the API under <code>/api/v1</code> (<a href="/docs">/docs</a>), health checks at <a href="/health">/health</a>, <code>/health/live</code> and <code>/health/ready</code>.</p></body></html>`;
  return reply.code(404).headers(HTML_HEADERS).type('text/html; charset=utf-8').send(page);
}

async function serve(assets: DashboardAssets, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const path = request.url.split('?')[0] ?? '/';
  if (SERVER_PATHS.test(path)) return notFound(reply);
  // A page of the app is never a file (those are /index.html and /assets/…): `/workers/web.1` is a page.
  const page = isDashboardPage(path);
  if (!page && !/\.[A-Za-z0-9]+$/.test(path)) return notAPage(request, reply, path);
  const state = assets.state;
  if (state.kind === 'absent') return notFound(reply);
  if (state.kind !== 'ready') {
    const building = state.kind === 'building' || state.kind === 'missing';
    const page = building
      ? waitPage('Spool dashboard is being built…', 'This takes a few seconds on first start; this page reloads itself.', true)
      : waitPage('The Spool dashboard could not be built', 'See the server log, or run <code>npm run build -w @spool/dashboard</code>.', false);
    return reply.code(503).header('retry-after', '2').headers(HTML_HEADERS).type('text/html; charset=utf-8').send(page);
  }
  const file = page ? null : await fileFor(state.dir, path);
  if (file) {
    if (file === 'index.html') reply.headers(HTML_HEADERS);
    else reply.header('x-content-type-options', 'nosniff').header('cache-control', file.startsWith(`assets${sep}`) ? IMMUTABLE : 'public, max-age=3600');
    return reply.sendFile(file, state.dir, { cacheControl: false });
  }
  // A missing asset is a 404; a page of the app gets index.html (client-side routing).
  if (!page) return notFound(reply);
  return reply.headers(HTML_HEADERS).sendFile('index.html', state.dir, { cacheControl: false });
}

/**
 * The dashboard at `/`: its built files, and index.html for its pages (so
 * /jobs?status=failed can be bookmarked); every other path is a 404. Starts
 * the build when the files are missing.
 */
export async function dashboardUiRoutes(app: FastifyInstance, ctx: AppContext, assets: DashboardAssets = dashboardAssets()): Promise<void> {
  void assets.ensure({ info: (message) => ctx.logger.info(message), error: (message) => ctx.logger.error(message) });
  await app.register(fastifyStatic, { serve: false, preCompressed: true });
  app.get('/*', { schema: { hide: true }, logLevel: 'warn' }, (request, reply) => serve(assets, request, reply));
}
