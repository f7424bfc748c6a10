import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Long polls, event streams and WebSockets are meant to last: their duration
 * says nothing about the server's speed.
 */
function longLived(request: FastifyRequest, reply: FastifyReply): boolean {
  if (request.headers.upgrade !== undefined) return true;
  const type = reply.raw.getHeader('content-type');
  if (typeof type === 'string' && type.startsWith('text/event-stream')) return true;
  const waitMs = (request.body as { wait_ms?: unknown } | null | undefined)?.wait_ms;
  return typeof waitMs === 'number' && waitMs > 0;
}

/**
 * One log line per request, at `debug`: at `info` two lines per request
 * buried everything else (the first-start key among it). A 5xx is logged at
 * `error` and a request slower than `slowMs` at `warn`, so both still show
 * at the default level. 4xx answers are the client's business (the SDKs
 * probe with 404s): `debug` too.
 */
export function installRequestLog(app: FastifyInstance, slowMs: number): void {
  app.addHook('onResponse', async (request, reply) => {
    const responseTime = Math.round(reply.elapsedTime * 10) / 10;
    const statusCode = reply.statusCode;
    const fields = { req: request, statusCode, responseTime };
    if (statusCode >= 500) request.log.error(fields, 'request failed with a server error');
    else if (slowMs > 0 && responseTime >= slowMs && !longLived(request, reply)) request.log.warn({ ...fields, slowMs }, 'slow request');
    else request.log.debug(fields, 'request completed');
  });
  // A stream the client hangs up never finishes, so onResponse never runs for it.
  app.addHook('onRequestAbort', async (request) => {
    request.log.debug({ req: request }, 'request ended by the client');
  });
}
