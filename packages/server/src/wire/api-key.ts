import { Type } from 'typebox';
import type { ApiKeyRow } from '@spool/engine';

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** ApiKeySummary (docs/compatibility.md §3.13): never the key itself. */
export const ApiKeySummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  queues: Type.Array(Type.String()),
  role: Type.String({ description: 'extension: admin, producer, worker or read_only' }),
  rate_limit: Type.Union([Type.Integer(), Type.Null()]),
  is_active: Type.Boolean(),
  created_at: Timestamp,
  last_used: NullableTimestamp,
  expires_at: NullableTimestamp,
});

export const CreatedApiKeySchema = Type.Object({
  id: Type.String(),
  key: Type.String({ description: 'Shown once; only its SHA-256 is stored' }),
  name: Type.String(),
  created_at: Timestamp,
  expires_at: NullableTimestamp,
  queues: Type.Array(Type.String(), { description: 'extension' }),
  role: Type.String({ description: 'extension: admin, producer, worker or read_only' }),
});

export function apiKeyToWire(row: ApiKeyRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    queues: row.queues,
    role: row.role,
    rate_limit: row.rate_limit,
    is_active: row.is_active,
    created_at: row.created_at.toISOString(),
    last_used: row.last_used?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
  };
}
