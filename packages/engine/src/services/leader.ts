import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Db } from '../db.js';
import { leaderAcquire, leaderRelease } from '../ops/leader.js';
import { LoopService, type Service } from './service.js';

export interface LeaderElectorOptions {
  /** Lease row name in spool.leader_leases. Default "spool". */
  lease?: string;
  /** Who we are in the lease row. Default "<hostname>/<pid>/<random>". */
  holder?: string;
  /** Lease lifetime. Default 15 s: a dead leader is replaced at most this long after its last renewal. */
  ttlMs?: number;
  /** Renewal (and follower retry) interval. Default ttlMs / 3, so two renewals may fail before the lease lapses. */
  renewMs?: number;
  /** Started in order when elected, stopped in reverse when demoted or stopped. */
  services?: Service[];
  /** Told about every change of leadership. */
  onChange?: (isLeader: boolean, reason: string) => void;
  log?: (message: string, err?: unknown) => void;
}

/**
 * Leader election through a lease row (ops/leader-acquire.sql), not a session
 * advisory lock, so it works through PgBouncer in transaction mode. The
 * leader renews every ttl/3; a follower retries every ttl/3, or just after
 * the current lease runs out, or at once when the leader announces that it
 * stepped down. The leader stops its services as soon as its own (monotonic)
 * clock says its lease may have lapsed, even if the database is unreachable,
 * so two leaders never run at once for longer than a transaction in flight.
 */
export class LeaderElector extends LoopService {
  readonly name = 'leader-elector';
  readonly holder: string;
  readonly #db: Db;
  readonly #lease: string;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #services: Service[];
  readonly #onChange: (isLeader: boolean, reason: string) => void;
  #leader = false;
  #watchdog: NodeJS.Timeout | null = null;
  #transition: Promise<void> = Promise.resolve();

  constructor(db: Db, options: LeaderElectorOptions = {}) {
    const ttlMs = options.ttlMs ?? 15_000;
    const renewMs = options.renewMs ?? Math.floor(ttlMs / 3);
    super({ idleMs: renewMs, errorDelayMs: Math.min(1_000, renewMs), log: options.log });
    this.#db = db;
    this.#lease = options.lease ?? 'spool';
    this.holder = options.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.#ttlMs = ttlMs;
    this.#renewMs = renewMs;
    this.#services = options.services ?? [];
    this.#onChange = options.onChange ?? (() => {});
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  async runOnce(): Promise<number> {
    const sentAt = performance.now();
    const attempt = await leaderAcquire(this.#db, this.#lease, this.holder, this.#ttlMs);
    if (attempt.acquired) {
      this.#armWatchdog(sentAt + this.#ttlMs - performance.now());
      if (!this.#leader) await this.#change(true, 'acquired the lease');
      else this.count('renewals', 1);
      return this.#renewMs;
    }
    if (this.#leader) await this.#change(false, `lease taken by ${attempt.currentHolder ?? 'another process'}`);
    const untilFree = attempt.remainingMs === null ? 0 : attempt.remainingMs + 25;
    return Math.max(0, Math.min(this.#renewMs, untilFree));
  }

  /**
   * Stops trying, stops the leader's services, and (unless `release` is
   * false, which simulates a crash) deletes the lease row so that another
   * replica takes over at once.
   */
  override async stop(options: { release?: boolean } = {}): Promise<void> {
    await super.stop();
    this.#disarmWatchdog();
    const wasLeader = this.#leader;
    if (wasLeader) await this.#change(false, 'stopping');
    await this.#transition;
    if (wasLeader && options.release !== false) {
      await leaderRelease(this.#db, this.#lease, this.holder).catch((err) => this.log('could not release the leader lease', err));
    }
  }

  /** The lease may lapse `ms` from now unless renewed: step down then. */
  #armWatchdog(ms: number): void {
    this.#disarmWatchdog();
    this.#watchdog = setTimeout(() => {
      this.#watchdog = null;
      if (this.#leader) void this.#change(false, 'lease could not be renewed in time');
    }, Math.max(0, ms));
    this.#watchdog.unref();
  }

  #disarmWatchdog(): void {
    if (this.#watchdog) clearTimeout(this.#watchdog);
    this.#watchdog = null;
  }

  /** Starts or stops the services; transitions run one at a time. */
  #change(leader: boolean, reason: string): Promise<void> {
    this.#transition = this.#transition.then(async () => {
      if (this.#leader === leader) return;
      this.#leader = leader;
      this.count(leader ? 'elected' : 'demoted', 1);
      if (!leader) this.#disarmWatchdog();
      this.#onChange(leader, reason);
      if (leader) {
        for (const service of this.#services) await service.start();
      } else {
        for (const service of [...this.#services].reverse()) {
          await Promise.resolve(service.stop()).catch((err) => this.log(`stopping ${service.name} failed`, err));
        }
      }
    });
    return this.#transition;
  }
}
