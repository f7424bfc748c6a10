import { apiKeyByHash, AUTH_CHANNEL, hashApiKey, type ApiKeyIdentity, type Db, type Notifier } from '@spool/engine';

/** Longest a cached key is trusted without hearing from the database; the backstop for a lost notification. */
const DEFAULT_TTL_MS = 2_000;
/** Keys remembered at once (each entry is a few hundred bytes). */
const MAX_ENTRIES = 10_000;

interface Entry {
  key: ApiKeyIdentity;
  until: number;
}

/**
 * Remembers recently presented API keys so that a request does not pay an
 * authentication query (it was one statement per job for single enqueues
 * and per gRPC `Complete`, next to a share of one INSERT). Correctness rests
 * on invalidation, not on the TTL:
 * - a trigger on `api_keys` and `organizations` (migration 012) sends
 *   `NOTIFY spool_auth` with every change that can refuse a key (revoke,
 *   expiry, queues, rate limit, plan, deletion), and every process forgets
 *   everything it cached when it hears one;
 * - the process that made the change forgets at once (`forget()`), so its
 *   own next request never races the notification;
 * - while the LISTEN connection is down nothing is cached or served from the
 *   cache (a missed notification cannot be detected), and a reconnect forgets all;
 * - a lookup that started before a change is not stored after it (generation).
 * Entries are keyed by the key's SHA-256, never by the key itself.
 */
export class ApiKeyCache {
  readonly #db: Db;
  readonly #notifier: Notifier | null;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry>();
  #generation = 0;
  /** For tests and metrics. */
  readonly counters = { hits: 0, misses: 0, invalidations: 0 };

  constructor(db: Db, notifier: Notifier | null, options: { ttlMs?: number } = {}) {
    this.#db = db;
    this.#notifier = notifier;
    this.#ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    // The notifier calls every handler with '' after a reconnect: forgetting then is exactly right.
    notifier?.listen(AUTH_CHANNEL, () => this.forget());
  }

  /** The key row for a presented key, or null (callers check is_active and expires_at). */
  async lookup(credential: string): Promise<ApiKeyIdentity | null> {
    const usable = this.#ttlMs > 0 && this.#notifier !== null && this.#notifier.connected;
    const digest = hashApiKey(credential);
    const hash = digest.toString('base64');
    const now = Date.now();
    if (usable) {
      const entry = this.#entries.get(hash);
      if (entry && entry.until > now) {
        this.counters.hits += 1;
        return entry.key;
      }
    }
    this.counters.misses += 1;
    const generation = this.#generation;
    const key = await apiKeyByHash(this.#db, digest);
    // Only positive answers are kept: an unknown key costs a query each time, as before.
    if (usable && key && generation === this.#generation && this.#notifier!.connected) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(hash, { key, until: now + this.#ttlMs });
    }
    return key;
  }

  /** Drops everything: a key or organization changed somewhere. */
  forget(): void {
    this.#generation += 1;
    this.counters.invalidations += 1;
    this.#entries.clear();
  }
}
