import type { Db } from '@spool/engine';

/**
 * Who may hold a plan-limit transaction. A check that holds its lock until
 * the insert it admits is done keeps a pool connection the whole time; while
 * waiting for the organization's lock it keeps one too. So that checks can
 * never take every connection (the inserts they wait for need one), at most
 * half the pool is held at once, and at most one check per organization and
 * resource waits in this process (others queue here, holding nothing; the
 * advisory lock orders them across replicas).
 */
export class AdmissionSlots {
  readonly #capacity: number;
  #held = 0;
  readonly #queue: (() => void)[] = [];
  readonly #tails = new Map<string, Promise<void>>();

  constructor(poolMax: number) {
    this.#capacity = Math.max(1, Math.floor(poolMax / 2));
  }

  /** Waits for a turn for `key` and a free slot; call the returned function exactly once to give both back. */
  async acquire(key: string): Promise<() => void> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => { done = resolve; });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    if (this.#held >= this.#capacity) await new Promise<void>((resolve) => this.#queue.push(resolve));
    else this.#held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      if (next) next();
      else this.#held--;
      done();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }
}

const slotsByPool = new WeakMap<Db, AdmissionSlots>();

/** The slots of one connection pool. */
export function admissionSlots(db: Db, poolMax: number): AdmissionSlots {
  let slots = slotsByPool.get(db);
  if (!slots) {
    slots = new AdmissionSlots(poolMax);
    slotsByPool.set(db, slots);
  }
  return slots;
}
