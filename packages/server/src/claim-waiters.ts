import { JOBS_CHANNEL, parseJobsNotice, type Notifier } from '@spool/engine';

/** Why a wait ended. */
export type WaitOutcome = 'woken' | 'timeout' | 'closed' | 'aborted';

/**
 * One long-polling claim waiting for jobs on one `organization:queue`, or on
 * any of several (a claim of `queue_names`). It is registered before the
 * claim that may come up empty, so a wakeup that arrives while that claim
 * runs is kept (the next `wait()` returns at once) instead of being lost.
 */
export class ClaimWaiter {
  /** The keys it waits on; one wakeup of any of them is its one wakeup. */
  readonly keys: readonly string[];
  readonly #owner: ClaimWaiters;
  #woken = false;
  #wokenBy: string | null = null;
  #settled = false;
  #settle: ((outcome: WaitOutcome) => void) | null = null;

  constructor(owner: ClaimWaiters, keys: readonly string[]) {
    this.#owner = owner;
    this.keys = keys;
  }

  /** Its first (for a single-queue claim, its only) key. */
  get key(): string {
    return this.keys[0]!;
  }

  /** True once a wakeup was handed to this waiter. */
  get woken(): boolean {
    return this.#woken;
  }

  /** The key whose wakeup it was handed, once woken: where to pass it on if unused. */
  get wokenBy(): string | null {
    return this.#wokenBy;
  }

  /** Resolves when woken, after `timeoutMs`, when the registry closes, or when `signal` aborts. Call once. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome> {
    if (this.#woken) return Promise.resolve(this.#finish('woken'));
    if (this.#settled) return Promise.resolve('closed');
    if (signal?.aborted) return Promise.resolve(this.#finish('aborted'));
    if (timeoutMs <= 0) return Promise.resolve(this.#finish('timeout'));
    return new Promise<WaitOutcome>((resolve) => {
      const timer = setTimeout(() => this.#settle?.('timeout'), timeoutMs);
      const onAbort = () => this.#settle?.('aborted');
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#settle = (outcome) => {
        this.#settle = null;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(this.#finish(outcome));
      };
    });
  }

  /** Unregisters without waiting. Returns true when a wakeup had been handed to this waiter and is now unused. */
  release(): boolean {
    const hadWake = this.#woken && !this.#settled;
    this.#finish('closed');
    return hadWake;
  }

  /** Called by the registry: hands this waiter a wakeup of `key`. */
  wake(key: string): void {
    if (this.#settled || this.#woken) return;
    this.#woken = true;
    this.#wokenBy = key;
    this.#settle?.('woken');
  }

  /** Called by the registry on close. */
  close(): void {
    if (this.#settled) return;
    if (this.#settle) this.#settle('closed');
    else this.#finish('closed');
  }

  #finish(outcome: WaitOutcome): WaitOutcome {
    this.#settled = true;
    this.#owner.forget(this);
    return outcome;
  }
}

/**
 * The per-process registry of long-polling claims (the `wait_ms` extension),
 * subscribed once to the notifier. A notification naming `org:queue` wakes
 * exactly ONE waiter of that queue, the longest waiting (pg-boss wakes every
 * poller, and all but one then find nothing: docs/design.md §8); a woken claimer that
 * fills its whole batch passes the wakeup on (see `claimWithWait`). After a
 * notifier reconnect, notifications may have been lost, so everyone wakes.
 * A waiter of several queues sits in each of their lines and leaves all of
 * them at its first wakeup.
 */
export class ClaimWaiters {
  readonly #byKey = new Map<string, Set<ClaimWaiter>>();
  #closed = false;
  #unsubscribe: (() => void) | null = null;
  /** For metrics and tests: wakeups handed out, notifications seen. */
  readonly counters = { wakeups: 0, notifications: 0 };

  constructor(notifier?: Pick<Notifier, 'listen'>) {
    if (notifier) this.#unsubscribe = notifier.listen(JOBS_CHANNEL, (payload) => this.#onNotification(payload));
  }

  static key(organizationId: string, queueName: string): string {
    return `${organizationId}:${queueName}`;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** How many claims are waiting (all queues, or one key). */
  size(key?: string): number {
    if (key !== undefined) return this.#byKey.get(key)?.size ?? 0;
    const all = new Set<ClaimWaiter>();
    for (const set of this.#byKey.values()) for (const waiter of set) all.add(waiter);
    return all.size;
  }

  /**
   * Registers a waiter for `key`, or for any of several keys (distinct).
   * After close, the waiter is already settled and `wait()` answers `closed`.
   */
  register(key: string | readonly string[]): ClaimWaiter {
    const waiter = new ClaimWaiter(this, typeof key === 'string' ? [key] : key);
    if (this.#closed) {
      waiter.close();
      return waiter;
    }
    for (const k of waiter.keys) {
      let set = this.#byKey.get(k);
      if (!set) {
        set = new Set();
        this.#byKey.set(k, set);
      }
      set.add(waiter);
    }
    return waiter;
  }

  /** Wakes the longest-waiting claim of `key`; false when nobody waits there. */
  wakeOne(key: string): boolean {
    const set = this.#byKey.get(key);
    if (!set) return false;
    for (const waiter of set) {
      this.forget(waiter);
      this.counters.wakeups += 1;
      waiter.wake(key);
      return true;
    }
    return false;
  }

  /** Wakes every waiting claim. */
  wakeAll(): void {
    for (const key of [...this.#byKey.keys()]) while (this.wakeOne(key));
  }

  /** Releases every waiting claim (they answer with what they have) and refuses new waits: shutdown must not wait out long polls. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    const all = new Set([...this.#byKey.values()].flatMap((set) => [...set]));
    this.#byKey.clear();
    for (const waiter of all) waiter.close();
  }

  /** Internal: a waiter settled, released or woken leaves the line of each of its keys. */
  forget(waiter: ClaimWaiter): void {
    for (const key of waiter.keys) {
      const set = this.#byKey.get(key);
      if (!set) continue;
      set.delete(waiter);
      if (set.size === 0) this.#byKey.delete(key);
    }
  }

  #onNotification(payload: string): void {
    this.counters.notifications += 1;
    if (payload === '') {
      this.wakeAll();
      return;
    }
    const notice = parseJobsNotice(payload);
    if (notice.all) {
      for (const key of [...this.#byKey.keys()]) this.wakeOne(key);
      return;
    }
    for (const key of notice.queues ?? []) this.wakeOne(key);
  }
}

export interface ClaimWithWaitOptions<T = unknown> {
  /** The queue's key (ClaimWaiters.key), or the keys of every queue a multi-queue claim names. */
  key: string | readonly string[];
  /** With several keys: the key of a claimed job's queue, so that a full batch passes a wakeup on to the queues that gave it (else to all). */
  keyOf?: (job: T) => string;
  /** 0 = claim once and answer at once (the contract's behaviour). */
  waitMs: number;
  /** The claim's batch size: a full batch suggests more jobs are due. */
  limit: number;
  /** Aborted when the client goes away: it must not be handed jobs it will never see. */
  signal?: AbortSignal;
}

/** What one claim attempt answers: its jobs, and, for a queue out of rate-limit tokens, when to try again. */
export interface ClaimAttempt<T> {
  jobs: T[];
  /** No notification announces refilled tokens, so a long poll sleeps this long and claims again. */
  retryAfterMs?: number | null;
}

/**
 * Claims; when nothing is due and `waitMs` > 0, waits for a wakeup of this
 * queue, or of any of the claim's queues (or, on a rate-limited queue out of
 * tokens, for the tokens), and claims again, until something is claimed or
 * the time is up.
 * A wakeup this caller cannot use (it already has jobs, or it is leaving) and
 * a full batch (more may be due) are passed on to the next waiting claim, so
 * waking one poller per notification never strands a job. A multi-queue
 * claim passes an unused wakeup on to the queue it came from, and a full
 * batch on to the queues that gave it and to the queue whose wakeup it used
 * (that queue's new job may be below the batch's cut).
 */
export async function claimWithWait<T>(waiters: ClaimWaiters, options: ClaimWithWaitOptions<T>, claim: () => Promise<ClaimAttempt<T>>): Promise<T[]> {
  const keys: readonly string[] = typeof options.key === 'string' ? [options.key] : options.key;
  const deadline = Date.now() + Math.max(0, options.waitMs);
  /** The key of the wakeup the last wait ended with: the claim after it used it. */
  let usedWake: string | null = null;
  for (;;) {
    if (options.signal?.aborted) return [];
    const waiter = deadline - Date.now() > 0 && !waiters.closed ? waiters.register(keys) : null;
    let attempt: ClaimAttempt<T>;
    try {
      attempt = await claim();
    } catch (err) {
      if (waiter?.release()) waiters.wakeOne(waiter.wokenBy!);
      throw err;
    }
    const { jobs } = attempt;
    if (jobs.length > 0 || waiter === null) {
      const unusedWake = waiter?.release() ? waiter.wokenBy : null;
      const passOn = new Set<string>();
      if (unusedWake !== null) passOn.add(unusedWake);
      if (jobs.length >= options.limit) {
        if (keys.length === 1) passOn.add(keys[0]!);
        else {
          if (usedWake !== null) passOn.add(usedWake);
          for (const key of options.keyOf ? jobs.map(options.keyOf) : keys) passOn.add(key);
        }
      }
      for (const key of passOn) waiters.wakeOne(key);
      return jobs;
    }
    const remaining = deadline - Date.now();
    const retryAfter = attempt.retryAfterMs ?? null;
    const outcome = await waiter.wait(retryAfter === null ? remaining : Math.min(remaining, retryAfter), options.signal);
    if (outcome === 'timeout' && retryAfter !== null && deadline - Date.now() > 0) continue;
    if (outcome !== 'woken') return [];
    if (options.signal?.aborted) {
      waiters.wakeOne(waiter.wokenBy!);
      return [];
    }
    usedWake = waiter.wokenBy;
  }
}
