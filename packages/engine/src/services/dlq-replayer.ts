import type { Db } from '../db.js';
import { dlqReplayBatch, dlqReplayDue, dlqReplayFailed, dlqReplayPrune } from '../ops/dlq-replay.js';
import { LoopService, type LoopServiceOptions } from './service.js';

export interface DlqReplayerOptions extends Partial<LoopServiceOptions> {
  /** Longest time one round spends on batches before it yields. Default 1 s. */
  roundMs?: number;
  /** Days a finished replay is kept. Default 30. */
  retentionDays?: number;
  /** How often finished replays are pruned. Default 10 min. */
  pruneEveryMs?: number;
}

/**
 * Runs paced DLQ replays (docs/jobs-api.md, "Paced DLQ replays") a batch at
 * a time: each round runs the batches that are due, most overdue first,
 * until none is or `roundMs` has passed, and sleeps until the next one is
 * due. Safe on every server at once: a batch takes its replay's row with
 * SKIP LOCKED and moves its jobs, writes their history and advances the
 * counters and the pace in one statement (ops/dlq-replay-batch.sql), so
 * servers share a replay's batches without replaying a job twice or going
 * faster than its `per_second` together, and a crash loses at most the
 * batch in flight, which the next round runs again. `wake()` after
 * creating a replay starts it at once; other servers find it within
 * `idleMs` (default 2 s).
 */
export class DlqReplayer extends LoopService {
  readonly name = 'dlq-replayer';
  readonly #db: Db;
  readonly #roundMs: number;
  readonly #retentionDays: number;
  readonly #pruneEveryMs: number;
  #prunedAt = 0;

  constructor(db: Db, options: DlqReplayerOptions = {}) {
    super({ idleMs: options.idleMs ?? 2_000, errorDelayMs: options.errorDelayMs ?? 1_000, startDelayMs: options.startDelayMs, log: options.log });
    this.#db = db;
    this.#roundMs = options.roundMs ?? 1_000;
    this.#retentionDays = options.retentionDays ?? 30;
    this.#pruneEveryMs = options.pruneEveryMs ?? 600_000;
  }

  async runOnce(): Promise<number> {
    const started = Date.now();
    if (started - this.#prunedAt >= this.#pruneEveryMs) {
      this.count('replays_pruned', await dlqReplayPrune(this.#db, this.#retentionDays, 1000));
      this.#prunedAt = started;
    }
    for (;;) {
      const { due, nextInMs } = await dlqReplayDue(this.#db, 10);
      if (due.length === 0) return nextInMs === null ? this.idleMs : Math.ceil(nextInMs);
      let ran = 0;
      for (const replay of due) {
        try {
          const after = await dlqReplayBatch(this.#db, replay);
          if (!after) continue;
          ran += 1;
          this.count('batches', 1);
          this.count('jobs_replayed', after.moved);
          if (after.status === 'completed') this.count('replays_completed', 1);
        } catch (err) {
          // The batch rolled back whole; the replay waits and tries again, and fails after a few tries.
          const status = await dlqReplayFailed(this.#db, replay, err instanceof Error ? err.message : String(err));
          this.count('batch_errors', 1);
          this.log(`${this.name}: a batch of replay ${replay.id} failed${status === 'failed' ? '; the replay is failed' : '; retrying'}`, err);
        }
      }
      // Due but all taken by neighbours (their batches in flight): look again shortly, not in a tight loop.
      if (ran === 0) return 25;
      if (Date.now() - started >= this.#roundMs) return 0;
    }
  }
}
