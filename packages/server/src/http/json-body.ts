import type { FastifyInstance } from 'fastify';

/**
 * Clients (the Spooled SDK) send `Content-Type: application/json` on every
 * request, including body-less POSTs and DELETEs: an empty body is `{}`
 * (CONTRACT §1.2). Everything else goes through Fastify's own parser, which
 * refuses prototype poisoning.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') {
      done(null, {});
      return;
    }
    parseJson(request, typeof body === "string" ? body : body.toString("utf8"), done);
  });
}
