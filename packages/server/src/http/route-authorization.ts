import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuthenticationError } from '@spool/protocol';
import type { Db } from '@spool/engine';
import { authorize, isOperation, type Grant, type Operation } from '../authorization.js';

/**
 * What a route addresses, checked before its handler runs:
 * - `job`: the job in the `:id` path parameter (404 when out of the key's reach);
 * - `queue`: the queue in the `:name` path parameter (403);
 * - `body_queue`: the body's `queue_name`, when present (403);
 * - `body_queues`: the body's `queue_name` and each of its `queue_names`,
 *   when present (403 naming the first the key may not use);
 * - `job_and_body_queue`: both, the job first (a job moved to another queue
 *   must be within reach where it is and where it goes).
 */
export type Addresses = 'job' | 'queue' | 'body_queue' | 'body_queues' | 'job_and_body_queue';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The operation this route performs (authorization.ts). Every authenticated route names one. */
    operation?: Operation;
    addresses?: Addresses;
  }
  interface FastifyRequest {
    grant: Grant | null;
  }
}

/**
 * Puts every route of an authenticated scope behind `authorize()`: a route
 * that names no operation is refused when it is registered (fail closed), and
 * each request is authorized, with what the route addresses checked, before
 * its handler runs.
 */
export function requireAuthorization(app: FastifyInstance, db: Db): void {
  app.addHook('onRoute', (route) => {
    const operation = (route.config as { operation?: unknown } | undefined)?.operation;
    if (!isOperation(operation)) throw new Error(`Route ${String(route.method)} ${route.url} names no authorization operation (config.operation)`);
  });
  app.addHook('preHandler', async (request) => {
    if (!request.auth) throw new AuthenticationError();
    const config = request.routeOptions.config;
    const grant = authorize(request.auth, config.operation!);
    request.grant = grant;
    const addresses = config.addresses;
    if (addresses === 'job' || addresses === 'job_and_body_queue') await grant.job(db, (request.params as { id: string }).id);
    if (addresses === 'queue') grant.queue((request.params as { name: string }).name);
    if (addresses === 'body_queue' || addresses === 'body_queues' || addresses === 'job_and_body_queue') {
      const queue = (request.body as { queue_name?: unknown } | undefined)?.queue_name;
      if (typeof queue === 'string') grant.queue(queue);
    }
    if (addresses === 'body_queues') {
      const queues = (request.body as { queue_names?: unknown } | undefined)?.queue_names;
      if (Array.isArray(queues)) grant.queues(queues.filter((queue): queue is string => typeof queue === 'string'));
    }
  });
}

/** The authorized request's Grant (inside an authenticated scope). */
export function grantOf(request: FastifyRequest): Grant {
  if (!request.grant) throw new AuthenticationError();
  return request.grant;
}
