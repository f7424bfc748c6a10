import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SpoolError } from '@spool/protocol';
import { describeValidationError } from './validation.js';
import { isTransientDatabaseError } from '../transient-database-error.js';

/** The contract's error body (docs/compatibility.md §1.4). `error` repeats the code for older clients. */
export function errorBody(code: string, message: string, details?: Record<string, unknown>): Record<string, unknown> {
  return { code, error: code.toLowerCase(), message, details: details ?? null };
}

// PostgreSQL SQLSTATEs that mean "the input was wrong", not "we broke".
const PG_CLIENT_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  '22P02': { status: 400, code: 'VALIDATION_ERROR', message: 'A value has the wrong format' },
  '22003': { status: 400, code: 'VALIDATION_ERROR', message: 'A number is out of range' },
  '22007': { status: 400, code: 'VALIDATION_ERROR', message: 'A timestamp is invalid' },
  '22008': { status: 400, code: 'VALIDATION_ERROR', message: 'A timestamp is out of range' },
  '22001': { status: 400, code: 'VALIDATION_ERROR', message: 'A value is too long' },
  '22023': { status: 400, code: 'VALIDATION_ERROR', message: 'A parameter value is invalid' },
  '22P05': { status: 400, code: 'VALIDATION_ERROR', message: 'Text contains a character PostgreSQL cannot store (\\u0000)' },
  // The same NUL in a text parameter (a query string's %00) rather than inside JSON.
  '22021': { status: 400, code: 'VALIDATION_ERROR', message: 'Text contains a character PostgreSQL cannot store (\\u0000)' },
  '23514': { status: 400, code: 'VALIDATION_ERROR', message: 'A value breaks a constraint' },
  '23505': { status: 409, code: 'CONFLICT', message: 'It already exists' },
  // An enqueue whose organization was deleted after the request authenticated (migration 013's lock).
  '23503': { status: 409, code: 'CONFLICT', message: 'It refers to something that no longer exists' },
  '54000': { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'A value is too large' },
};

/** Health-check paths of other servers, which a probe configured by habit tries. */
const PROBE_LOOKALIKES = /^\/(healthz|readyz|livez|ready|live|ping|status|healthcheck)\/?$/i;

/**
 * One mapping from every error to a response: domain errors carry their
 * status and code; validation and parser errors are 4xx with a precise
 * message; only genuine failures are 500 (and those are logged).
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError & { code?: string; validation?: unknown; validationContext?: string }, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof SpoolError) {
      if (error.code === 'RATE_LIMIT_EXCEEDED' && typeof error.details?.retry_after === 'number') reply.header('Retry-After', String(error.details.retry_after));
      const body = errorBody(error.code, error.message, error.details);
      // Plan-limit refusals carry resource/current/limit/plan/upgrade_to at the top level too (docs/compatibility.md §1.4).
      return reply.code(error.status).send(error.code === 'LIMIT_EXCEEDED' ? { ...error.details, ...body } : body);
    }
    if (Array.isArray(error.validation)) {
      const { message, field } = describeValidationError(error.validation as never, error.validationContext);
      return reply.code(400).send(errorBody('VALIDATION_ERROR', message, field ? { field } : undefined));
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply.code(413).send(errorBody('PAYLOAD_TOO_LARGE', 'Request body is too large'));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send(errorBody('BAD_REQUEST', 'Unsupported Content-Type: send application/json'));
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return reply.code(400).send(errorBody('BAD_REQUEST', `Malformed JSON body: ${error.message}`));
      case 'FST_ERR_RATE_LIMIT':
        return reply.code(429).send(errorBody('RATE_LIMIT_EXCEEDED', error.message));
      default:
        break;
    }
    const sqlState = typeof error.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code) ? error.code : null;
    if (sqlState && PG_CLIENT_ERRORS[sqlState]) {
      const mapped = PG_CLIENT_ERRORS[sqlState]!;
      request.log.info({ sqlState, detail: error.message }, 'database refused input');
      return reply.code(mapped.status).send(errorBody(mapped.code, mapped.message));
    }
    if (isTransientDatabaseError(error)) {
      request.log.warn({ err: error }, 'transient database error');
      return reply.code(503).header('Retry-After', '1').send(errorBody('INTERNAL_ERROR', 'Database temporarily unavailable; retry shortly'));
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send(errorBody(error.statusCode === 404 ? 'NOT_FOUND' : 'BAD_REQUEST', error.message));
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send(errorBody('INTERNAL_ERROR', 'Internal server error'));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const hint = PROBE_LOOKALIKES.test(path) ? ': health checks are GET /health, /health/live and /health/ready' : '';
    reply.code(404).send(errorBody('NOT_FOUND', `Route ${request.method} ${path} not found${hint}`));
  });
}
