/** Spool extension: paced DLQ replays (docs/jobs-api.md, "Paced DLQ replays"). */
import type { CallOptions } from '../http.js';
import { sleep } from '../http.js';
import { Resource, seg } from './resource.js';

export type DlqReplayStatus = 'running' | 'completed' | 'cancelled' | 'failed';

/** Changes made to each job as it is replayed (absent or null: unchanged). Payloads are edited one job at a time (`jobs.update`). */
export interface DlqReplayEdits {
  priority?: number | null;
  maxRetries?: number | null;
  /** Moves the jobs to this queue. */
  queueName?: string | null;
}

/** A replay and its progress. */
export interface DlqReplay {
  id: string;
  status: DlqReplayStatus;
  queueName: string | null;
  /** How many ids the request listed (null: not by ids). */
  jobIdsCount: number | null;
  errorContains: string | null;
  createdAfter: string | null;
  createdBefore: string | null;
  limit: number;
  edits: { priority: number | null; maxRetries: number | null; queueName: string | null };
  /** The pace across every server (null: as fast as batches go). */
  perSecond: number | null;
  batchSize: number;
  /** Jobs listed at creation. */
  total: number;
  /** Jobs replayed so far. */
  done: number;
  /** Listed jobs that were no longer dead-lettered when their turn came. */
  skipped: number;
  remaining: number;
  /** Percent of the listed jobs handled (done + skipped), 0..100. */
  progress: number;
  /** Jobs replayed per second since creation (null before the first batch). */
  rate: number | null;
  /** Seconds until a running replay is done (null when finished or unknown). */
  etaSeconds: number | null;
  /** The credential that created it (`api_key:<id>`), as in each replayed job's history. */
  createdBy: string;
  cancelledBy: string | null;
  /** Why the last batch failed. */
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  updatedAt: string;
  finishedAt: string | null;
}

export interface CreateDlqReplayParams {
  /** Only this queue's dead letters (else every queue the key may use). */
  queueName?: string;
  /** Only these jobs (1..10,000). */
  jobIds?: string[];
  createdAfter?: Date | string;
  createdBefore?: Date | string;
  /** Only jobs whose last error contains this text (case-insensitive). */
  errorContains?: string;
  /** At most this many jobs, oldest first (1..100,000; default 100,000). */
  limit?: number;
  edits?: DlqReplayEdits;
  /** Jobs per second at most, across every server (1..10,000); absent: as fast as batches go. */
  perSecond?: number;
}

export interface ListDlqReplaysParams {
  status?: DlqReplayStatus;
  limit?: number;
  offset?: number;
}

export interface WaitForDlqReplayOptions {
  /** Between two reads of the replay. Default 1000 ms. */
  intervalMs?: number;
  /** Called with the replay after each read, the last (finished) one included. */
  onProgress?: (replay: DlqReplay) => void;
  /** Stops waiting (rejects with the signal's reason); the replay goes on. */
  signal?: AbortSignal;
}

export class DlqReplaysResource extends Resource {
  /**
   * Starts a replay of the dead letters that match (202): it lists them now
   * and replays them in the background at `perSecond`. Not retried on its
   * own (a lost answer would start a second replay, whose jobs the first
   * has mostly taken).
   */
  create(params: CreateDlqReplayParams = {}, options?: CallOptions): Promise<DlqReplay> {
    return this.call({ method: 'POST', path: '/api/v1/jobs/dlq/replays', body: params }, options);
  }

  get(id: string, options?: CallOptions): Promise<DlqReplay> {
    return this.call({ method: 'GET', path: `/api/v1/jobs/dlq/replays/${seg(id)}` }, options);
  }

  /** Replays newest first (a key limited to some queues sees those within them). */
  list(params: ListDlqReplaysParams = {}, options?: CallOptions): Promise<DlqReplay[]> {
    return this.call({ method: 'GET', path: '/api/v1/jobs/dlq/replays', query: { ...params } }, options);
  }

  /** Cancels a running replay between two batches; jobs already replayed stay replayed. A finished one is a ConflictError. */
  cancel(id: string, options?: CallOptions): Promise<DlqReplay> {
    return this.call({ method: 'DELETE', path: `/api/v1/jobs/dlq/replays/${seg(id)}` }, options);
  }

  /**
   * Reads the replay every `intervalMs` until it is no longer running and
   * returns it (completed, cancelled or failed: check `status`), calling
   * `onProgress` with each reading.
   */
  async waitFor(id: string, options: WaitForDlqReplayOptions = {}, callOptions?: CallOptions): Promise<DlqReplay> {
    const interval = Math.max(10, options.intervalMs ?? 1000);
    const signal = options.signal ?? callOptions?.signal;
    for (;;) {
      const replay = await this.get(id, { ...callOptions, signal });
      options.onProgress?.(replay);
      if (replay.status !== 'running') return replay;
      await sleep(interval, signal);
    }
  }
}
