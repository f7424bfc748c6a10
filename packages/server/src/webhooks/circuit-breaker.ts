export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit for a host. Default 5. */
  threshold?: number;
  /** First pause; doubles after each failed probe up to maxCooldownMs. Default 30 s. */
  cooldownMs?: number;
  maxCooldownMs?: number;
}

interface HostState {
  failures: number;
  openUntil: number;
  cooldownMs: number;
  probing: boolean;
}

export type BreakerDecision = { allowed: true; probe: boolean } | { allowed: false; retryAt: number };

/**
 * Per destination host (extension): after `threshold` consecutive failed
 * deliveries the host is paused; when the pause ends one delivery goes
 * through as a probe, and only its success resumes normal delivery (a
 * failed probe pauses the host again, for twice as long). Paused deliveries
 * are deferred without using up their attempts. State is per process.
 */
export class CircuitBreaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #maxCooldownMs: number;
  readonly #hosts = new Map<string, HostState>();

  constructor(options: CircuitBreakerOptions = {}) {
    this.#threshold = options.threshold ?? 5;
    this.#cooldownMs = options.cooldownMs ?? 30_000;
    this.#maxCooldownMs = options.maxCooldownMs ?? 300_000;
  }

  check(host: string, now = Date.now()): BreakerDecision {
    const state = this.#hosts.get(host);
    if (!state || state.failures < this.#threshold) return { allowed: true, probe: false };
    if (now < state.openUntil) return { allowed: false, retryAt: state.openUntil };
    if (state.probing) return { allowed: false, retryAt: now + 1_000 };
    state.probing = true;
    return { allowed: true, probe: true };
  }

  success(host: string): void {
    this.#hosts.delete(host);
  }

  failure(host: string, now = Date.now()): void {
    const state = this.#hosts.get(host) ?? { failures: 0, openUntil: 0, cooldownMs: this.#cooldownMs, probing: false };
    if (state.probing) {
      state.probing = false;
      state.cooldownMs = Math.min(state.cooldownMs * 2, this.#maxCooldownMs);
      state.openUntil = now + state.cooldownMs;
    } else {
      state.failures += 1;
      if (state.failures >= this.#threshold) state.openUntil = now + state.cooldownMs;
    }
    this.#hosts.set(host, state);
  }

  /** Hosts currently paused (for metrics and tests). */
  openHosts(now = Date.now()): string[] {
    return [...this.#hosts].filter(([, s]) => s.failures >= this.#threshold && (now < s.openUntil || s.probing)).map(([host]) => host);
  }
}
