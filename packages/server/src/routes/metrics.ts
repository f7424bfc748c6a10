import type { FastifyInstance } from 'fastify';
import { AuthenticationError } from '@spool/protocol';
import type { AppContext } from '../app.js';
import { authorize } from '../authorization.js';
import { authenticate, bearer } from '../http/auth.js';
import { organizationSeries } from '../metrics/operator-token.js';

/**
 * docs/compatibility.md §3.1: GET /metrics at the root, Prometheus text. Never public
 * (docs/metrics.md, "Who may scrape"): the operator token (METRICS_TOKEN, or
 * the one generated at first start) sees the whole cluster; an organization's
 * API key or access token sees only its own series, of its key's queues.
 */
export function metricsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/metrics', { schema: { tags: ['health'], summary: 'Prometheus metrics (docs/metrics.md): the operator token for the cluster, an API key for its organization' } }, async (request, reply) => {
    const presented = bearer(request);
    if (!presented) throw new AuthenticationError('Metrics need a credential: Authorization: Bearer <metrics operator token> for the cluster, or an API key for its organization (docs/metrics.md)');
    const body = await ctx.metrics.render();
    if (ctx.metricsToken.matches(presented)) return reply.type(ctx.metrics.contentType).send(body);
    const grant = authorize(await authenticate(ctx, presented), 'metrics.read');
    return reply.type(ctx.metrics.contentType).send(organizationSeries(body, grant.organizationId, (queue) => grant.allows(queue)));
  });
}
