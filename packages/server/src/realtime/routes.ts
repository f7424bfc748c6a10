import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isTerminal, type JobStatus } from '@spool/protocol';
import { isUuid, realtimeJobState, realtimeQueueStats } from '@spool/engine';
import type { AppContext } from '../app.js';
import type { Operation } from '../authorization.js';
import { RealtimeAuthorization } from './authorization.js';
import { errorBody } from '../http/errors.js';
import { ConnectionRegistry, realtimeCredential } from './connections.js';
import { dottedName, envelope, parseEventFilter, unknownEventNames, type RealtimeEvent } from './events.js';
import { addWarning } from '../http/warnings.js';
import { ValidationError, REALTIME_EVENT_NAMES } from '@spool/protocol';
import { RealtimeHub } from './hub.js';
import { StreamPosition } from './position.js';
import { SseConnection } from './sse.js';
import { EventStream } from './stream.js';
import { websocketRoute } from './ws.js';

const SYSTEM_HEALTH_MS = 10_000;
const QUEUE_STATS_MS = 5_000;

const EventsQuery = Type.Object({ token: Type.Optional(Type.String()), events: Type.Optional(Type.String()), last_event_id: Type.Optional(Type.String()) });

/** Realtime plumbing shared by the SSE and WebSocket routes of one process. */
export interface RealtimeContext {
  app: AppContext;
  hub: RealtimeHub;
  connections: ConnectionRegistry;
}

function resumePoint(request: FastifyRequest): StreamPosition | null {
  const header = request.headers['last-event-id'];
  const query = (request.query as { last_event_id?: string }).last_event_id;
  return StreamPosition.parse(typeof header === 'string' ? header : query);
}

/** Authenticates (401 before anything is streamed), opens the SSE response and registers it. */
/**
 * Authenticates and authorizes `operation` (401/403 before the stream opens),
 * then opens the stream; it closes when the key stops authorizing it.
 */
async function openSse(rt: RealtimeContext, request: FastifyRequest, reply: FastifyReply, operation: Operation): Promise<{ authz: RealtimeAuthorization; conn: SseConnection }> {
  const authz = await RealtimeAuthorization.open(rt.app, realtimeCredential(request), operation);
  if (operation === 'queue.read') authz.grant.queue((request.params as { name: string }).name);
  const conn = new SseConnection(request, reply, authz.auth.organizationId);
  conn.onClose(rt.connections.add(conn));
  conn.onClose(authz.watch(() => conn.close()));
  return { authz, conn };
}

/** Attaches the stream, then starts the response: every event from then on reaches the client. */
async function start(rt: RealtimeContext, conn: SseConnection, stream: EventStream, resume: StreamPosition | null, beforeLive?: () => Promise<void>): Promise<void> {
  conn.onClose(() => stream.close(rt.hub));
  try {
    await stream.open(rt.hub, rt.app.db, resume, { attached: () => conn.begin(), beforeLive });
  } catch (err) {
    rt.app.logger.warn({ err }, 'realtime stream failed to start');
    conn.fail(503, errorBody('INTERNAL_ERROR', 'Event stream unavailable; retry shortly'));
  }
}

function sseRoutes(app: FastifyInstance, rt: RealtimeContext): void {
  app.get<{ Querystring: { events?: string } }>('/events', {
    schema: { tags: ['realtime'], summary: "Server-Sent Events: the organization's job, queue, worker and schedule events (supports Last-Event-ID)", querystring: EventsQuery },
  }, async (request, reply) => {
    // The contract's filter: an unknown name is kept (it matches nothing) and said in a warning.
    const unknown = unknownEventNames(request.query.events);
    if (unknown.length > 0) addWarning(reply, `events: ${unknown.join(', ')} ${unknown.length > 1 ? 'match' : 'matches'} no event a stream carries, so ${unknown.length > 1 ? 'they select' : 'it selects'} nothing (the names: docs/realtime.md)`);
    const { authz, conn } = await openSse(rt, request, reply, 'events.read');
    const filter = parseEventFilter(request.query.events);
    const stream = new EventStream({
      organizationId: authz.auth.organizationId,
      visible: (event) => authz.visible(event),
      onEvent: (event, token) => {
        const envelopes = event.envelopes.filter((e) => !filter || filter.has(dottedName(e.type)));
        if (envelopes.length > 0) conn.send(envelopes, token());
      },
      onOverflow: () => conn.close(),
    });
    conn.every(SYSTEM_HEALTH_MS, () => {
      if (!filter || filter.has('system.health')) conn.send([envelope('SystemHealth', { database: rt.hub.healthy, redis: true })]);
    });
    await start(rt, conn, stream, resumePoint(request));
  });

  app.get<{ Params: { id: string } }>('/events/jobs/:id', {
    schema: { tags: ['realtime'], summary: "Server-Sent Events: one job's status changes; ends after a terminal status", params: Type.Object({ id: Type.String() }), querystring: EventsQuery },
  }, async (request, reply) => {
    const { authz, conn } = await openSse(rt, request, reply, 'job.read');
    const auth = authz.auth;
    const jobId = request.params.id;
    const resume = resumePoint(request);
    let last: string | null = null;
    let ignoreUpTo = 0;
    const change = (event: Pick<RealtimeEvent, 'jobId' | 'queueName'>, from: string, to: string, token?: string) => {
      conn.send([envelope('JobStatusChange', { job_id: event.jobId, queue_name: event.queueName, old_status: from, new_status: to })], token);
      last = to;
      if (isTerminal(to as JobStatus)) conn.close();
    };
    const stream = new EventStream({
      organizationId: auth.organizationId,
      jobId: isUuid(jobId) ? jobId : null,
      visible: (event) => authz.visible(event),
      onEvent: (event, token) => {
        if (event.log !== 'history' || event.jobId !== jobId || event.id <= ignoreUpTo || !event.toStatus || event.toStatus === last) return;
        change(event, last ?? event.fromStatus ?? '', event.toStatus, token());
      },
      onOverflow: () => conn.close(),
    });
    await start(rt, conn, stream, resume, async () => {
      const found = isUuid(jobId) ? await realtimeJobState(rt.app.db, auth.organizationId, jobId) : null;
      // A job of a queue out of the key's reach is answered like a missing one.
      const state = found && authz.visible({ queueName: found.queue_name }) ? found : null;
      if (!state) {
        conn.send([envelope('Error', { message: 'Job not found', job_id: jobId })]);
        conn.close();
        return;
      }
      if (resume) {
        if (isTerminal(state.status)) conn.close();
        return;
      }
      ignoreUpTo = state.last_history_id;
      change({ jobId, queueName: state.queue_name }, '', state.status);
    });
  });

  app.get<{ Params: { name: string }; Querystring: { events?: string } }>('/events/queues/:name', {
    schema: { tags: ['realtime'], summary: "Server-Sent Events: a queue's QueueStats every 5 s, its job events and queue.paused/queue.resumed", params: Type.Object({ name: Type.String() }), querystring: EventsQuery },
  }, async (request, reply) => {
    // Spool's own filter here (the contract has none on this route): an unknown name is a 400.
    const unknown = unknownEventNames(request.query.events);
    if (unknown.length > 0) {
      const shown = unknown.slice(0, 5).map((name) => (name.length > 40 ? `${name.slice(0, 37)}...` : name)).join(', ') + (unknown.length > 5 ? ` and ${unknown.length - 5} more` : '');
      throw new ValidationError(`events: unknown event name${unknown.length > 1 ? 's' : ''} ${shown}; use dotted or PascalCase names of ${REALTIME_EVENT_NAMES.join(', ')}`, { field: 'events' });
    }
    const { authz, conn } = await openSse(rt, request, reply, 'queue.read');
    const auth = authz.auth;
    const queueName = request.params.name;
    const filter = parseEventFilter(request.query.events);
    const stats = async () => {
      if (filter && !filter.has('queue.stats')) return;
      try {
        const counts = await realtimeQueueStats(rt.app.db, auth.organizationId, queueName);
        conn.send([envelope('QueueStats', { queue_name: queueName, ...counts })]);
      } catch (err) {
        rt.app.logger.warn({ err }, 'queue stats for realtime failed');
      }
    };
    const stream = new EventStream({
      organizationId: auth.organizationId,
      queueName,
      visible: (event) => authz.visible(event),
      onEvent: (event, token) => {
        // The queue's job events (job.progress and job.log included) and its queue.paused / queue.resumed.
        if (event.queueName !== queueName || (event.eventType !== null && !event.eventType.startsWith('queue.') && !event.eventType.startsWith('job.'))) return;
        const envelopes = event.envelopes.filter((e) => !filter || filter.has(dottedName(e.type)));
        if (envelopes.length > 0) conn.send(envelopes, token());
      },
      onOverflow: () => conn.close(),
    });
    conn.every(QUEUE_STATS_MS, () => void stats());
    await start(rt, conn, stream, resumePoint(request), stats);
  });
}

/**
 * docs/compatibility.md §4: SSE at /events, /events/jobs/{id}, /events/queues/{name} and
 * the WebSocket at /ws. These routes authenticate themselves (header or
 * `?token=`), so they are mounted outside the authenticated scope.
 */
export function realtimeRoutes(app: FastifyInstance, ctx: AppContext): void {
  const rt: RealtimeContext = {
    app: ctx,
    hub: new RealtimeHub(ctx.db, ctx.notifier, { log: (message, err) => ctx.logger.warn({ err }, message) }),
    connections: new ConnectionRegistry(),
  };
  app.addHook('preClose', async () => {
    rt.connections.closeAll('server shutting down');
    rt.hub.stop();
  });
  sseRoutes(app, rt);
  websocketRoute(app, rt);
}
