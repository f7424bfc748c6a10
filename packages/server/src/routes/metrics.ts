import type { FastifyInstance } from 'fastify';
import { AuthenticationError } from '@spool/protocol';
import type { AppContext } from '../app.js';
import { sameSecret } from '../http/same-secret.js';

/**
 * CONTRACT §3.1: GET /metrics at the root, Prometheus text. Public unless
 * METRICS_TOKEN is set; then it wants `Authorization: Bearer <token>`.
 */
export function metricsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/metrics', { schema: { tags: ['health'], summary: 'Prometheus metrics (docs/metrics.md)' } }, async (request, reply) => {
    const token = ctx.config.metricsToken;
    if (token) {
      const header = request.headers.authorization ?? '';
      const presented = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
      if (!presented || !sameSecret(presented, token)) throw new AuthenticationError('A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>)');
    }
    const body = await ctx.metrics.render();
    return reply.type(ctx.metrics.contentType).send(body);
  });
}
