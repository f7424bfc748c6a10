import {
  LoopService,
  webhookDeliveryClaim,
  webhookDeliveryDefer,
  webhookDeliveryRecord,
  webhookDispatch,
  type ClaimedDelivery,
  type Db,
  type LoopServiceOptions,
} from '@spool/engine';
import { CircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.js';
import { sendWebhook } from './sender.js';
import type { WebhookPolicy } from './ssrf.js';
import type { ServerTracing } from '../tracing.js';
import { ATTR_MESSAGING_MESSAGE_ID, ATTR_ORGANIZATION } from '../trace-spans.js';

export interface WebhookDeliveryOptions extends Partial<LoopServiceOptions> {
  policy: WebhookPolicy;
  /** Deliveries in flight at once. Default 10. */
  concurrency?: number;
  /** First retry delay; doubles per attempt (1, 2, 4, 8 s) plus up to 500 ms jitter. */
  retryBaseMs?: number;
  timeoutMs?: number;
  breaker?: CircuitBreakerOptions;
  /** The server's spans: one client span per delivery attempt (null: none). */
  tracing?: ServerTracing | null;
}

/**
 * Outgoing webhook delivery (docs/compatibility.md §3.11). Each round it (1) turns new
 * job history and new events (spool.events) into rows of the durable
 * delivery queue (one process per log at a time, under the cursor rows'
 * locks) and (2) claims due deliveries with
 * SKIP LOCKED and sends them without waiting for slow receivers. Failed
 * attempts are retried after 1, 2, 4 and 8 s plus jitter, five attempts in
 * all; a delivery survives restarts because it lives in the table. Safe to
 * run in every process.
 */
export class WebhookDelivery extends LoopService {
  readonly name = 'webhook-delivery';
  readonly breaker: CircuitBreaker;
  readonly #db: Db;
  readonly #policy: WebhookPolicy;
  readonly #concurrency: number;
  readonly #retryBaseMs: number;
  readonly #timeoutMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #tracing: ServerTracing | null;

  constructor(db: Db, options: WebhookDeliveryOptions) {
    super({ idleMs: options.idleMs ?? 250, log: options.log });
    this.#db = db;
    this.#policy = options.policy;
    this.#concurrency = options.concurrency ?? 10;
    this.#retryBaseMs = options.retryBaseMs ?? 1_000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.breaker = new CircuitBreaker(options.breaker);
    this.#tracing = options.tracing ?? null;
  }

  async runOnce(): Promise<number> {
    const { read, created } = await webhookDispatch(this.#db);
    this.count('dispatched', created);
    const free = this.#concurrency - this.#inFlight.size;
    const claimed = free > 0 ? await webhookDeliveryClaim(this.#db, free) : [];
    for (const delivery of claimed) {
      const attempt = this.#attempt(delivery).catch((err) => this.log(`webhook delivery ${delivery.id} could not be recorded`, err));
      this.#inFlight.add(attempt);
      void attempt.finally(() => {
        this.#inFlight.delete(attempt);
        this.wake();
      });
    }
    return read >= 1000 || (claimed.length > 0 && claimed.length === free) ? 0 : this.idleMs;
  }

  override async stop(): Promise<void> {
    await super.stop();
    await Promise.allSettled([...this.#inFlight]);
  }

  /** A client span per attempt, linked to the job's stored context when the delivery is about a job. */
  async #startSpan(tracing: ServerTracing, delivery: ClaimedDelivery, host: string) {
    const job = delivery.job_id
      ? (await tracing.jobContexts(this.#db, delivery.organization_id, [delivery.job_id]).catch(() => new Map())).get(delivery.job_id.toLowerCase())
      : undefined;
    const url = new URL(delivery.target_url);
    return tracing.start({
      name: 'POST',
      kind: 'client',
      parent: null,
      links: job?.trace ? [{ context: job.trace, attributes: { [ATTR_MESSAGING_MESSAGE_ID]: delivery.job_id ?? undefined } }] : [],
      attributes: {
        'http.request.method': 'POST',
        'server.address': url.hostname,
        'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        'url.scheme': url.protocol.replace(':', ''),
        'spool.webhook.event': delivery.event,
        'spool.webhook.delivery_id': delivery.id,
        'spool.webhook.attempt': delivery.attempts,
        'spool.webhook.host': host,
        [ATTR_ORGANIZATION]: delivery.organization_id,
      },
    });
  }

  /** Attempt n failed: wait 2^(n-1) × base plus up to 500 ms. */
  retryDelayMs(attempt: number): number {
    return this.#retryBaseMs * 2 ** Math.max(0, attempt - 1) + Math.random() * 500;
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    if (!delivery.enabled) {
      await webhookDeliveryRecord(this.#db, delivery.id, { success: false, statusCode: null, responseBody: null, error: 'Webhook is disabled', retryInMs: null });
      return;
    }
    let host: string;
    try {
      host = new URL(delivery.target_url).host;
    } catch {
      await webhookDeliveryRecord(this.#db, delivery.id, { success: false, statusCode: null, responseBody: null, error: 'Invalid webhook URL', retryInMs: null });
      return;
    }
    const decision = this.breaker.check(host);
    if (!decision.allowed) {
      this.count('deferred', 1);
      await webhookDeliveryDefer(this.#db, delivery.id, new Date(decision.retryAt));
      return;
    }
    const span = this.#tracing ? await this.#startSpan(this.#tracing, delivery, host) : null;
    const response = await sendWebhook({
      url: delivery.target_url,
      body: JSON.stringify(delivery.payload),
      event: delivery.event,
      attempt: delivery.attempts,
      secret: delivery.secret,
      deliveryId: delivery.id,
      policy: this.#policy,
      timeoutMs: this.#timeoutMs,
      trace: span?.context ?? null,
    });
    if (span) {
      span.setAttributes({ 'http.response.status_code': response.statusCode ?? undefined, 'spool.webhook.success': response.success });
      span.end(response.success ? undefined : new Error(response.error ?? 'delivery failed'));
    }
    if (response.success) this.breaker.success(host);
    else if (!response.permanent) this.breaker.failure(host);
    const lastAttempt = delivery.attempts >= delivery.max_attempts;
    const retryInMs = response.success || response.permanent || lastAttempt ? null : this.retryDelayMs(delivery.attempts);
    const status = await webhookDeliveryRecord(this.#db, delivery.id, { ...response, retryInMs });
    this.count(response.success ? 'delivered' : status === 'failed' ? 'failed' : 'retried', 1);
    if (!response.success) {
      this.log(`webhook delivery ${delivery.id} (${delivery.event}) attempt ${delivery.attempts} failed: ${response.error}${retryInMs === null ? '; giving up' : `; retrying in ${Math.round(retryInMs)} ms`}`);
    }
  }
}
