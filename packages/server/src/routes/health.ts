import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../app.js';

async function databaseUp(ctx: AppContext): Promise<boolean> {
  try {
    await ctx.db.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/**
 * docs/compatibility.md §3.1: `cache` is true because Spool has no cache to be down.
 * `version` is reported to every caller (the contract allows leaving it out
 * unauthenticated): it is public anyway in the OpenAPI document at
 * /docs/json, and an operator checking a rollout wants it from the probe.
 */
export function healthRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/health', async (_request, reply) => {
    const database = await databaseUp(ctx);
    return reply.send({ status: database ? 'healthy' : 'degraded', version: ctx.version, database, cache: true });
  });
  app.get('/health/live', async () => ({ status: 'alive' }));
  app.get('/health/ready', async (_request, reply) => {
    const database = await databaseUp(ctx);
    return reply.code(database ? 200 : 503).send({ status: database ? 'ready' : 'not_ready', database });
  });
}
