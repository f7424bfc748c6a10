import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { organizationDashboard } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';

const Int = Type.Integer();
const DashboardResponse = Type.Object({
  system: Type.Object({
    version: Type.String(),
    uptime_seconds: Int,
    started_at: Type.String({ format: 'date-time' }),
    database_status: Type.String(),
    cache_status: Type.String(),
    environment: Type.String(),
  }),
  jobs: Type.Object({
    total: Int,
    pending: Int,
    processing: Int,
    completed_24h: Int,
    failed_24h: Int,
    deadletter: Int,
    avg_wait_time_ms: Type.Union([Type.Number(), Type.Null()]),
    avg_processing_time_ms: Type.Union([Type.Number(), Type.Null()]),
  }),
  queues: Type.Array(Type.Object({ name: Type.String(), pending: Int, processing: Int, paused: Type.Boolean() })),
  workers: Type.Object({ total: Int, healthy: Int, unhealthy: Int }),
  recent_activity: Type.Object({ jobs_created_1h: Int, jobs_completed_1h: Int, jobs_failed_1h: Int }),
});

const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 10) / 10);

/** docs/compatibility.md §3.16; clients also use it to probe that a key works, so `system.version` is always there. */
export function dashboardRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/dashboard', {
    config: { operation: 'dashboard.read' },
    schema: { tags: ['dashboard'], summary: "The organization's overview in one call", response: { 200: DashboardResponse } },
  }, async (request) => {
    const grant = grantOf(request);
    const d = await organizationDashboard(ctx.db, grant.organizationId, grant.queueFilter);
    return {
      system: {
        version: ctx.version,
        uptime_seconds: Math.floor((Date.now() - ctx.startedAt.getTime()) / 1000),
        started_at: ctx.startedAt.toISOString(),
        database_status: 'healthy',
        cache_status: 'not_configured',
        environment: ctx.config.environment,
      },
      jobs: {
        total: d.total,
        pending: d.pending,
        processing: d.processing,
        completed_24h: d.completed_24h,
        failed_24h: d.failed_24h,
        deadletter: d.deadletter,
        avg_wait_time_ms: round(d.avg_wait_time_ms),
        avg_processing_time_ms: round(d.avg_processing_time_ms),
      },
      queues: d.queues,
      workers: { total: d.workers_total, healthy: d.workers_healthy, unhealthy: d.workers_total - d.workers_healthy },
      recent_activity: { jobs_created_1h: d.created_1h, jobs_completed_1h: d.completed_1h, jobs_failed_1h: d.failed_1h },
    };
  });
}
