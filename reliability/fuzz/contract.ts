import type { RawRequest, RawResponse } from './raw-http.js';

/** docs/compatibility.md §1.4: the codes an error body may carry. */
export const ERROR_CODES = new Set([
  'VALIDATION_ERROR', 'BAD_REQUEST', 'AUTHENTICATION_FAILED', 'UNAUTHORIZED', 'ACCESS_DENIED', 'NOT_FOUND', 'CONFLICT',
  'LEASE_EXPIRED', 'PAYLOAD_TOO_LARGE', 'RATE_LIMIT_EXCEEDED', 'LIMIT_EXCEEDED', 'INTERNAL_ERROR',
]);

/** Routes allowed to hold a request open: event streams, the WebSocket, long-polling claims. */
const MAY_HOLD_OPEN = [/^\/api\/v1\/events/, /^\/api\/v1\/ws/, /^\/api\/v1\/jobs\/claim/];

/**
 * What is wrong with one answer, or [] when nothing is: never a 5xx or a
 * hang, every 4xx carries the contract's error body, JSON is JSON, 204 is empty.
 */
export function responseProblems(request: RawRequest, response: RawResponse): string[] {
  const path = request.target.split('?')[0]!;
  if (response.timedOut) return MAY_HOLD_OPEN.some((re) => re.test(path)) ? [] : ['no complete answer before the deadline'];
  if (response.reset) return ['connection closed without an answer'];
  if (response.status >= 500) return [`answered ${response.status}`];
  if (response.streamed || request.method === 'HEAD') return [];
  const type = response.headers['content-type'] ?? '';
  const text = response.body.toString('utf8');
  if (response.status === 204) return response.body.length === 0 ? [] : ['204 with a body'];
  if (response.status >= 400) {
    if (!type.includes('application/json')) return [`${response.status} without a JSON error body (content-type "${type}")`];
    let body: { code?: unknown; message?: unknown };
    try {
      body = JSON.parse(text);
    } catch {
      return [`${response.status} with malformed JSON`];
    }
    const problems: string[] = [];
    if (typeof body?.code !== 'string' || !ERROR_CODES.has(body.code)) problems.push(`${response.status} error body has code ${JSON.stringify(body?.code)}`);
    if (typeof body?.message !== 'string' || body.message.length === 0) problems.push(`${response.status} error body has no message`);
    return problems;
  }
  if (type.includes('application/json') && text.length > 0) {
    try {
      JSON.parse(text);
    } catch {
      return [`${response.status} with malformed JSON`];
    }
  }
  return [];
}
