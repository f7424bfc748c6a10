export interface GroupCommitOptions {
  /** Most items per write. Default 500. */
  maxBatch?: number;
  /** How long an item may wait for company while another write is running. Default 1 ms. */
  maxDelayMs?: number;
  /** Writes (connections) running at once; later items queue up and share the next one. Default 2. */
  maxConcurrentFlushes?: number;
}

interface Pending<In, Out> {
  item: In;
  resolve: (value: Out) => void;
  reject: (err: unknown) => void;
}

// Class 22 (data exception) and 23 (integrity violation): one bad row. Anything
// else (connection loss, shutdown) would fail the single writes the same way.
function isRowError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * Group commit (docs/design.md §7, §8): concurrent callers that each write one item
 * share one multi-row statement, one NOTIFY and one commit instead of paying
 * a commit (and the cluster-wide NOTIFY lock) each.
 *
 * When no write is running, the items that arrived in the current event-loop
 * turn go at once (no added latency when idle). While writes run, arrivals
 * gather for up to `maxDelayMs`, or until a write slot frees up. `write` gets
 * the items in arrival order and answers one result per item, in order. If a
 * batch fails because of one bad row, its items are retried one by one so
 * only the culprit's caller sees the error. Items with the same `keyOf` never
 * share a write: the later one waits for the next, so each sees the effect of
 * the one before (as two separate requests would).
 */
export class GroupCommit<In, Out> {
  readonly #write: (items: In[]) => Promise<Out[]>;
  readonly #keyOf: ((item: In) => string) | null;
  readonly #maxBatch: number;
  readonly #maxDelayMs: number;
  readonly #maxConcurrent: number;
  #pending: Pending<In, Out>[] = [];
  #timer: { kind: 'immediate'; handle: NodeJS.Immediate } | { kind: 'timeout'; handle: NodeJS.Timeout } | null = null;
  #inFlight = 0;
  #idle: (() => void)[] = [];
  /** For metrics and tests: writes, items written, batches retried item by item. */
  readonly counters = { flushes: 0, items: 0, fallbacks: 0 };

  constructor(write: (items: In[]) => Promise<Out[]>, options: GroupCommitOptions & { keyOf?: (item: In) => string } = {}) {
    this.#write = write;
    this.#keyOf = options.keyOf ?? null;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxDelayMs = options.maxDelayMs ?? 1;
    this.#maxConcurrent = options.maxConcurrentFlushes ?? 2;
  }

  /** Writes one item as part of the next shared statement. */
  submit(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#maxBatch && this.#inFlight < this.#maxConcurrent) this.#flush();
      else this.#schedule();
    });
  }

  /** Resolves once every item handed in so far has been written (or failed). */
  async drain(): Promise<void> {
    if (this.#pending.length > 0 && this.#inFlight < this.#maxConcurrent) this.#flush();
    if (this.#pending.length === 0 && this.#inFlight === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#timer !== null || this.#inFlight >= this.#maxConcurrent) return;
    const fire = () => {
      this.#timer = null;
      this.#flush();
    };
    this.#timer = this.#inFlight === 0
      ? { kind: 'immediate', handle: setImmediate(fire) }
      : { kind: 'timeout', handle: setTimeout(fire, this.#maxDelayMs) };
  }

  #take(): Pending<In, Out>[] {
    if (this.#keyOf === null) return this.#pending.splice(0, this.#maxBatch);
    const keys = new Set<string>();
    const batch: Pending<In, Out>[] = [];
    const rest: Pending<In, Out>[] = [];
    for (const pending of this.#pending) {
      const key = this.#keyOf(pending.item);
      if (batch.length < this.#maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(pending);
      } else {
        rest.push(pending);
      }
    }
    this.#pending = rest;
    return batch;
  }

  #flush(): void {
    const timer = this.#timer;
    if (timer !== null) {
      if (timer.kind === 'immediate') clearImmediate(timer.handle);
      else clearTimeout(timer.handle);
      this.#timer = null;
    }
    const batch = this.#take();
    if (batch.length === 0) return;
    this.#inFlight += 1;
    this.counters.flushes += 1;
    this.counters.items += batch.length;
    void this.#run(batch).finally(() => {
      this.#inFlight -= 1;
      if (this.#pending.length > 0) this.#flush();
      else if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  async #run(batch: Pending<In, Out>[]): Promise<void> {
    try {
      const results = await this.#write(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1 || !isRowError(err)) {
        for (const p of batch) p.reject(err);
        return;
      }
      this.counters.fallbacks += 1;
      for (const p of batch) {
        try {
          p.resolve((await this.#write([p.item]))[0]!);
        } catch (single) {
          p.reject(single);
        }
      }
    }
  }
}
