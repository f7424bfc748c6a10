/** The life cycle every long-running part shares: start and stop, both safe to call twice. */
export interface Service {
  readonly name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export interface LoopServiceOptions {
  /** Longest sleep between runs when nothing asks for an earlier one. */
  idleMs: number;
  log?: (message: string, err?: unknown) => void;
}

/**
 * A maintenance loop: `runOnce()` does one bounded unit of work (tests call
 * it directly) and returns how long to sleep before the next run; `wake()`
 * cuts a sleep short. Errors are logged and retried after `idleMs`.
 */
export abstract class LoopService implements Service {
  abstract readonly name: string;
  /** What the service did, for metrics: counter name -> total. */
  readonly counters = new Map<string, number>();
  protected readonly idleMs: number;
  protected readonly log: (message: string, err?: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  #inFlight: Promise<void> | null = null;
  #wakeRequested = false;

  constructor(options: LoopServiceOptions) {
    this.idleMs = options.idleMs;
    this.log = options.log ?? (() => {});
  }

  /** Does one round of work; returns the delay in ms until the next round. */
  abstract runOnce(): Promise<number>;

  protected count(counter: string, n: number): void {
    if (n > 0) this.counters.set(counter, (this.counters.get(counter) ?? 0) + n);
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#inFlight;
  }

  /** Run as soon as possible (e.g. new work was announced). */
  wake(): void {
    if (!this.#running) return;
    if (this.#inFlight) {
      this.#wakeRequested = true;
      return;
    }
    this.#schedule(0);
  }

  /** Run no later than `delayMs` from now. */
  wakeAt(delayMs: number): void {
    if (!this.#running || this.#inFlight) {
      if (this.#inFlight && delayMs <= 0) this.#wakeRequested = true;
      return;
    }
    this.#schedule(Math.max(0, delayMs), true);
  }

  #nextAt = Infinity;

  #schedule(delayMs: number, onlyIfSooner = false): void {
    const at = Date.now() + delayMs;
    if (onlyIfSooner && at >= this.#nextAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#nextAt = at;
    this.#timer = setTimeout(() => void this.#tick(), delayMs);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    this.#timer = null;
    this.#nextAt = Infinity;
    if (!this.#running) return;
    let delay = this.idleMs;
    this.#inFlight = (async () => {
      try {
        delay = await this.runOnce();
      } catch (err) {
        this.count('errors', 1);
        this.log(`${this.name} failed; retrying in ${this.idleMs} ms`, err);
        delay = this.idleMs;
      }
    })();
    await this.#inFlight;
    this.#inFlight = null;
    if (!this.#running) return;
    if (this.#wakeRequested) {
      this.#wakeRequested = false;
      delay = 0;
    }
    this.#schedule(Math.max(0, Math.min(delay, this.idleMs)));
  }
}
