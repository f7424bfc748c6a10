import { JOBS_CHANNEL, parseJobsNotice, type Notifier } from '@spool/engine';

/**
 * Wakes streaming workers when jobs may have become claimable on their queue,
 * fed by the `spool_jobs` notifications (payload `{q:["org:queue"]}`; empty
 * or `all` = anything may have changed). Kept behind this small interface so
 * that it can be swapped for the process-wide claim-waiter registry.
 */
export interface JobWakeups {
  /** Arm before looking for work: a notification that lands between the look and the wait is kept. */
  arm(organizationId: string, queueName: string): Waiter;
  close(): void;
}

export interface Waiter {
  /** Resolves true when woken, false on timeout or abort; at most one wait per waiter. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /** Forget the waiter (it found work without waiting). */
  cancel(): void;
}

class QueueWaiter implements Waiter {
  fired = false;
  #resolve: ((woken: boolean) => void) | null = null;
  readonly #release: () => void;

  constructor(release: () => void) {
    this.#release = release;
  }

  fire(): void {
    this.fired = true;
    this.#settle(true);
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.fired) {
      this.#release();
      return Promise.resolve(true);
    }
    if (signal?.aborted) {
      this.#release();
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => this.#settle(false), timeoutMs);
      const onAbort = () => this.#settle(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#resolve = (woken) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(woken);
      };
    });
  }

  cancel(): void {
    this.#settle(false);
    this.#release();
  }

  #settle(woken: boolean): void {
    const resolve = this.#resolve;
    this.#resolve = null;
    if (resolve) {
      this.#release();
      resolve(woken);
    }
  }
}

/** JobWakeups over this process's notifier connection. */
export class NotifierJobWakeups implements JobWakeups {
  readonly #waiters = new Map<string, Set<QueueWaiter>>();
  readonly #unlisten: () => void;

  constructor(notifier: Notifier) {
    this.#unlisten = notifier.listen(JOBS_CHANNEL, (payload) => this.#notified(payload));
  }

  arm(organizationId: string, queueName: string): Waiter {
    const key = `${organizationId}:${queueName}`;
    let set = this.#waiters.get(key);
    if (!set) {
      set = new Set();
      this.#waiters.set(key, set);
    }
    const waiters = set;
    const waiter: QueueWaiter = new QueueWaiter(() => {
      waiters.delete(waiter);
      if (waiters.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key);
    });
    waiters.add(waiter);
    return waiter;
  }

  close(): void {
    this.#unlisten();
    for (const set of [...this.#waiters.values()]) for (const waiter of [...set]) waiter.fire();
  }

  #notified(payload: string): void {
    const notice = parseJobsNotice(payload);
    const keys = notice.queues === null ? [...this.#waiters.keys()] : notice.queues;
    for (const key of keys) {
      const set = this.#waiters.get(key);
      if (set) for (const waiter of [...set]) waiter.fire();
    }
  }
}
