import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { RateLimitError } from '@spool/protocol';
import { canonicalId } from '@spool/engine';
import { RealtimeAuthorization } from './authorization.js';
import { errorBody } from '../http/errors.js';
import type { Closable } from './connections.js';
import { realtimeCredential } from './connections.js';
import { dottedName, envelope, parseEventFilter, type Envelope, type RealtimeEvent } from './events.js';
import type { RealtimeContext } from './routes.js';
import { EventStream } from './stream.js';

const MAX_CONNECTIONS_PER_ORG = 100;
const PING_MS = 30_000;
const MAX_QUEUED_BYTES = 1024 * 1024;
const MAX_SUBSCRIPTIONS = 1000;

interface WsQuery {
  token?: string;
  queue?: string;
  job_id?: string;
  events?: string;
}

/** One WebSocket client: filters, subscriptions and a bounded send queue. */
class WsClient implements Closable {
  readonly kind = 'ws';
  readonly organizationId: string;
  readonly #socket: WebSocket;
  readonly #query: WsQuery;
  readonly #events: Set<string> | null;
  readonly #queues = new Set<string>();
  readonly #jobs = new Set<string>();

  constructor(socket: WebSocket, organizationId: string, query: WsQuery) {
    this.#socket = socket;
    this.organizationId = organizationId;
    this.#query = query;
    this.#events = parseEventFilter(query.events);
  }

  send(env: Envelope): void {
    if (this.#socket.readyState !== this.#socket.OPEN) return;
    this.#socket.send(JSON.stringify(env));
    // Bounded memory: a client that does not read is dropped.
    if (this.#socket.bufferedAmount > MAX_QUEUED_BYTES) this.#socket.terminate();
  }

  deliver(event: RealtimeEvent): void {
    if (this.#query.queue && event.queueName !== this.#query.queue) return;
    if (this.#query.job_id && event.jobId !== this.#query.job_id) return;
    // No subscription: every event of the organization; otherwise those of a subscribed queue or job.
    if ((this.#queues.size > 0 || this.#jobs.size > 0) && !this.#queues.has(event.queueName) && !this.#jobs.has(event.jobId)) return;
    for (const env of event.envelopes) if (!this.#events || this.#events.has(dottedName(env.type))) this.send(env);
  }

  /** A reply that is not an event: the Python SDK's command acknowledgements. */
  #reply(message: Record<string, unknown>): void {
    if (this.#socket.readyState !== this.#socket.OPEN) return;
    this.#socket.send(JSON.stringify(message));
  }

  /**
   * A command failed: an Error event (what the Node SDK and the dashboards
   * read), and for a command with a request id also the `error` reply the
   * Python SDK waits for.
   */
  #fail(message: string, requestId: string | null): void {
    this.send(envelope('Error', { message }));
    if (requestId !== null) this.#reply({ type: 'error', requestId, error: message, message });
  }

  /**
   * Client → server commands (docs/compatibility.md §4.1). The Node SDK and the official
   * dashboard send `{"cmd":"Subscribe"}`; the Python SDK sends
   * `{"type":"subscribe","requestId":…}` and waits for `subscribed`,
   * `unsubscribed` or `pong` carrying its requestId. So the command is read
   * from `cmd`, `command` or `type`, in any case, and a command with a
   * requestId is answered; one without keeps the contract's behaviour (no
   * acknowledgement; Ping is answered with a Ping event).
   */
  command(raw: string): void {
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      message = parsed as Record<string, unknown>;
    } catch {
      this.#fail('Messages must be JSON objects: {"cmd":"Subscribe"|"Unsubscribe"|"Ping", "queue"?, "job_id"?}', null);
      return;
    }
    const rawId = message.requestId ?? message.request_id;
    const requestId = typeof rawId === 'string' && rawId !== '' ? rawId.slice(0, 200) : typeof rawId === 'number' && Number.isFinite(rawId) ? String(rawId) : null;
    const name = [message.cmd, message.command, message.type].find((value): value is string => typeof value === 'string' && value !== '');
    const queue = typeof message.queue === 'string' && message.queue ? message.queue : null;
    const job = typeof message.job_id === 'string' && message.job_id ? canonicalId(message.job_id) : null;
    switch (name?.toLowerCase()) {
      case 'subscribe':
        if (this.#queues.size + this.#jobs.size >= MAX_SUBSCRIPTIONS) {
          this.#fail(`At most ${MAX_SUBSCRIPTIONS} subscriptions per connection; unsubscribe from some first`, requestId);
          return;
        }
        if (queue) this.#queues.add(queue);
        if (job) this.#jobs.add(job);
        if (requestId !== null) this.#reply({ type: 'subscribed', requestId, queue, job_id: job });
        return;
      case 'unsubscribe':
        if (queue) this.#queues.delete(queue);
        if (job) this.#jobs.delete(job);
        if (!queue && !job) {
          this.#queues.clear();
          this.#jobs.clear();
        }
        if (requestId !== null) this.#reply({ type: 'unsubscribed', requestId, queue, job_id: job });
        return;
      case 'ping':
        if (requestId !== null) this.#reply({ type: 'pong', requestId, timestamp: new Date().toISOString() });
        else this.send(envelope('Ping', {}));
        return;
      default:
        this.#fail(`Unknown command ${JSON.stringify(name ?? null)}: send {"cmd":"Subscribe"|"Unsubscribe"|"Ping"} (also as "command" or "type", in any case)`, requestId);
    }
  }

  close(reason = 'closing'): void {
    if (this.#socket.readyState === this.#socket.OPEN || this.#socket.readyState === this.#socket.CONNECTING) this.#socket.close(1001, reason);
  }
}

/** The authorization made before the upgrade, handed to the socket's handler. */
const authorizations = new WeakMap<FastifyRequest, RealtimeAuthorization>();

/** docs/compatibility.md §4.1: GET /api/v1/ws. Authenticated before the upgrade (plain 401 on failure). */
export function websocketRoute(app: FastifyInstance, rt: RealtimeContext): void {
  app.route<{ Querystring: WsQuery }>({
    method: 'GET',
    url: '/ws',
    // A plain GET (no Upgrade) gets a contract error body, not the plugin's empty 404.
    handler: async (_request, reply) => reply.code(426).header('upgrade', 'websocket').send(errorBody('BAD_REQUEST', 'This endpoint speaks WebSocket: connect with Upgrade: websocket')),
    schema: { tags: ['realtime'], summary: 'WebSocket: Ping on open and every 30 s; job, queue, worker and schedule events; Subscribe/Unsubscribe/Ping commands' },
    onRequest: async (request: FastifyRequest) => {
      const authz = await RealtimeAuthorization.open(rt.app, realtimeCredential(request), 'events.read');
      authorizations.set(request, authz);
      request.auth = authz.auth;
      if (rt.connections.count(request.auth.organizationId, (c) => (c as { kind?: string }).kind === 'ws') >= MAX_CONNECTIONS_PER_ORG) {
        throw new RateLimitError(5, `At most ${MAX_CONNECTIONS_PER_ORG} WebSocket connections per organization`);
      }
    },
    wsHandler: (socket, request) => {
      const authz = authorizations.get(request)!;
      const client = new WsClient(socket, authz.auth.organizationId, request.query);
      const unregister = rt.connections.add(client);
      const unwatch = authz.watch((reason) => client.close(reason.slice(0, 100)));
      const stream = new EventStream({
        organizationId: authz.auth.organizationId,
        visible: (event) => authz.visible(event),
        onEvent: (event) => client.deliver(event),
        onOverflow: () => socket.terminate(),
      });
      socket.on('message', (data) => client.command(data.toString()));
      const ping = setInterval(() => client.send(envelope('Ping', {})), PING_MS);
      ping.unref();
      socket.on('close', () => {
        clearInterval(ping);
        unwatch();
        unregister();
        stream.close(rt.hub);
      });
      // The first Ping says "subscribed": from then on no event is missed.
      stream.open(rt.hub, rt.app.db, null, { attached: () => client.send(envelope('Ping', {})) }).catch((err) => {
        rt.app.logger.warn({ err }, 'realtime stream failed to start');
        client.send(envelope('Error', { message: 'Event stream unavailable; reconnect shortly' }));
        client.close('stream unavailable');
      });
    },
  });
}
