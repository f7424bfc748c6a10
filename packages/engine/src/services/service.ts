/** The life cycle every long-running part shares: start and stop, both safe to call twice. */
export interface Service {
  readonly name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export interface LoopServiceOptions {
  /** Longest sleep between runs when nothing asks for an earlier one. */
  idleMs: number;
  /** Delay before retrying after runOnce() threw. Default: idleMs. */
  errorDelayMs?: number;
  /** Delay of the first run after start(). Default 0; non-urgent services wait so that a process start (or a new leader) is not a burst of work. */
  startDelayMs?: number;
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
  protected readonly errorDelayMs: number;
  readonly #startDelayMs: number;
  protected readonly log: (message: string, err?: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  #inFlight: Promise<void> | null = null;
  /** Earliest wake-up asked for while a round was running (epoch ms). */
  #wakeBy = Infinity;

  constructor(options: LoopServiceOptions) {
    this.idleMs = options.idleMs;
    this.errorDelayMs = options.errorDelayMs ?? options.idleMs;
    this.#startDelayMs = options.startDelayMs ?? 0;
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
    this.#wakeBy = Infinity;
    this.#schedule(this.#startDelayMs);
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#inFlight;
  }

  /** Run as soon as possible (e.g. new work was announced). */
  wake(): void {
    this.wakeAt(0);
  }

  /**
   * Run no later than `delayMs` from now. A request that arrives while a
   * round is running is kept and honoured when the round ends: that round
   * may have read the database before the change that caused the request.
   */
  wakeAt(delayMs: number): void {
    if (!this.#running) return;
    const at = Date.now() + Math.max(0, delayMs);
    if (this.#inFlight) {
      this.#wakeBy = Math.min(this.#wakeBy, at);
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
        this.log(`${this.name} failed; retrying in ${this.errorDelayMs} ms`, err);
        delay = this.errorDelayMs;
      }
    })();
    await this.#inFlight;
    this.#inFlight = null;
    if (!this.#running) return;
    if (this.#wakeBy !== Infinity) {
      delay = Math.min(delay, this.#wakeBy - Date.now());
      this.#wakeBy = Infinity;
    }
    this.#schedule(Math.max(0, Math.min(delay, this.idleMs)));
  }
}
