import type { FastifyInstance } from 'fastify';
import { LIMITS, ValidationError } from '@spool/protocol';

/**
 * True when `text` (JSON) nests arrays/objects deeper than `max`. A scan of
 * the text, before parsing: a 10,000-level body parses fine but overflows
 * the stack later (JSON.stringify of the payload, PostgreSQL's jsonb input),
 * which would be a 500 far from the cause.
 */
export function jsonNestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** The 400 for a body nested too deeply. */
export function tooDeepError(field = 'body'): ValidationError {
  return new ValidationError(`${field} is nested more than ${LIMITS.jsonDepthMax} levels deep`, { field });
}

/**
 * Clients (the Spooled SDK) send `Content-Type: application/json` on every
 * request, including body-less POSTs and DELETEs: an empty body is `{}`
 * (CONTRACT §1.2). Everything else goes through Fastify's own parser, which
 * refuses prototype poisoning, after the nesting check.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, {});
      return;
    }
    if (jsonNestedDeeperThan(text, LIMITS.jsonDepthMax)) {
      done(tooDeepError(), undefined);
      return;
    }
    parseJson(request, text, done);
  });
}
