/**
 * What an API key may do (extension: the Spooled contract's keys have no role; they are `admin`).
 * - `admin`: everything its queues allow (today's keys, the default).
 * - `producer`: enqueue, and read the jobs of its queues.
 * - `worker`: claim, heartbeat, complete and fail jobs of its queues, and register workers.
 * - `read_only`: read everything its queues allow; change nothing.
 */
export const API_KEY_ROLES = ['admin', 'producer', 'worker', 'read_only'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

export function isApiKeyRole(value: unknown): value is ApiKeyRole {
  return typeof value === 'string' && (API_KEY_ROLES as readonly string[]).includes(value);
}
