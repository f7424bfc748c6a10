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

export interface WebhookDeliveryOptions extends Partial<LoopServiceOptions> {
  policy: WebhookPolicy;
  /** Deliveries in flight at once. Default 10. */
  concurrency?: number;
  /** First retry delay; doubles per attempt (1, 2, 4, 8 s) plus up to 500 ms jitter. */
  retryBaseMs?: number;
  timeoutMs?: number;
  breaker?: CircuitBreakerOptions;
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

  constructor(db: Db, options: WebhookDeliveryOptions) {
    super({ idleMs: options.idleMs ?? 250, log: options.log });
    this.#db = db;
    this.#policy = options.policy;
    this.#concurrency = options.concurrency ?? 10;
    this.#retryBaseMs = options.retryBaseMs ?? 1_000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.breaker = new CircuitBreaker(options.breaker);
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
    const response = await sendWebhook({
      url: delivery.target_url,
      body: JSON.stringify(delivery.payload),
      event: delivery.event,
      attempt: delivery.attempts,
      secret: delivery.secret,
      deliveryId: delivery.id,
      policy: this.#policy,
      timeoutMs: this.#timeoutMs,
    });
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
