import type { JobStatus } from '@spool/protocol';
import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';
import { isUuid } from '../ids.js';
import { WORKER_SILENCE_MS_DEFAULT } from '../services/worker-liveness.js';

const statement = sqlFile(import.meta.url, './job-explain.sql');

/** `queued_behind` counts at most this many jobs ahead: enough to say "a lot", cheap to count. */
export const EXPLAIN_AHEAD_CAP = 10_000;

/** Every reason code GET /jobs/{id}/explain may give (docs/jobs-api.md, "Explain"). */
export const EXPLAIN_CODES = [
  'queue_paused',
  'scheduled',
  'in_backoff',
  'snoozed',
  'debounced',
  'rate_limited',
  'concurrency_limit',
  'concurrency_key_full',
  'dependencies_pending',
  'blocked_by_failed_dependency',
  'expired',
  'no_live_workers',
  'leased',
  'queued_behind',
  'finished',
  'dead_lettered',
  'failed',
  'cancelled',
  'not_claimable',
] as const;
export type ExplainCode = (typeof EXPLAIN_CODES)[number];

/**
 * One reason, shaped for the wire: times are ISO strings. `blocking` is
 * false for hints (no live workers, the place in line), which do not stop a
 * claim from taking the job.
 */
export interface ExplainReason {
  code: ExplainCode;
  message: string;
  blocking: boolean;
  /** When the reason ends by itself, if it does (a schedule, a backoff, a token, a lease). */
  until?: string;
  [detail: string]: unknown;
}

export interface JobExplanation {
  job_id: string;
  queue_name: string;
  status: JobStatus;
  /** A claim on the job's queue right now could take it. */
  runnable: boolean;
  reasons: ExplainReason[];
  /** The database time the facts are from. */
  checked_at: string;
}

interface DependencyFact {
  job_id: string;
  status: JobStatus | null;
  queue_name: string | null;
}

/** job-explain.sql's row. */
export interface JobExplainFacts {
  id: string;
  queue_name: string;
  status: JobStatus;
  priority: number;
  created_at: Date;
  scheduled_at: Date | null;
  expires_at: Date | null;
  in_backoff: boolean;
  retry_count: number;
  max_retries: number;
  last_error: string | null;
  completed_at: Date | null;
  dependencies_met: boolean | null;
  dependency_mode: 'all' | 'any' | null;
  concurrency_key: string | null;
  fairness_key: string | null;
  assigned_worker_id: string | null;
  lease_expires_at: Date | null;
  cancel_requested_at: Date | null;
  job_key: string | null;
  job_key_mode: 'dedupe' | 'debounce' | 'throttle' | 'replace' | null;
  claimable: boolean;
  /** The latest history event of the job's own (null when its rows are batched ones only). */
  last_event: string | null;
  configured: boolean;
  enabled: boolean;
  paused_at: Date | null;
  pause_reason: string | null;
  rate_limit: number | null;
  rate_burst: number;
  rate_available: number | null;
  concurrency_limit: number | null;
  concurrency_key_limit: number | null;
  /** The queue's fair share (`round_robin`), or null. */
  fairness: string | null;
  processing_count: number | null;
  key_running: number | null;
  dependencies: { count: number; items: DependencyFact[] } | null;
  live_workers: number;
  ahead: number | null;
  checked_at: Date;
}

export interface JobExplainOptions {
  /**
   * Whether the caller may see a job of this queue; dependencies of other
   * queues are then counted but not named. Default: every queue.
   */
  canSee?: (queueName: string) => boolean;
  /** A worker silent this long is not live (the worker-liveness service's window). */
  workerSilenceMs?: number;
}

/**
 * Why a job is (not) running: one read of the facts (job-explain.sql), then
 * reasons in plain words, each telling what to do next. Null when the job
 * does not exist in the organization (also for ids that are not UUIDs).
 * Reads only: asking never takes a rate-limit token or locks a row.
 */
export async function jobExplain(db: Queryable, organizationId: string, id: string, options: JobExplainOptions = {}): Promise<JobExplanation | null> {
  if (!isUuid(id)) return null;
  const silenceMs = options.workerSilenceMs ?? WORKER_SILENCE_MS_DEFAULT;
  const [facts] = await run<JobExplainFacts>(db, statement, [organizationId, id.toLowerCase(), EXPLAIN_AHEAD_CAP, silenceMs]);
  if (!facts) return null;
  return explainFacts(facts, { canSee: options.canSee ?? (() => true), silenceMs });
}

const iso = (d: Date): string => d.toISOString();
const api = (path: string): string => `/api/v1${path}`;
const configPath = (queue: string): string => api(`/queues/${encodeURIComponent(queue)}/config`);
const quoted = (text: string, max = 200): string => `"${text.length > max ? `${text.slice(0, max)}…` : text}"`;
const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** Dependencies that will never complete by themselves: failed for good, cancelled, or deleted. */
const DEAD_DEPENDENCY = new Set<JobStatus | null>(['deadletter', 'failed', 'cancelled', null]);

/** The reasons for a set of facts; pure, so every branch can be tested without a database. */
export function explainFacts(f: JobExplainFacts, options: { canSee: (queueName: string) => boolean; silenceMs: number }): JobExplanation {
  const now = f.checked_at.getTime();
  const reasons: ExplainReason[] = [];
  const queue = f.queue_name;
  const jobPath = api(`/jobs/${f.id}`);
  const add = (reason: ExplainReason) => reasons.push(reason);
  let capacityBlocked = false;

  switch (f.status) {
    case 'completed':
      add({ code: 'finished', blocking: true, completed_at: iso(f.completed_at!), message: `It completed at ${iso(f.completed_at!)}: there is nothing left to run. Its result is on GET ${jobPath}.` });
      break;
    case 'deadletter':
      add({
        code: 'dead_lettered', blocking: true, last_error: f.last_error, retry_count: f.retry_count, max_retries: f.max_retries, completed_at: iso(f.completed_at!),
        message: `It was dead-lettered at ${iso(f.completed_at!)} after ${plural(f.retry_count + 1, 'failed attempt')}${f.last_error ? ` (last error: ${quoted(f.last_error)})` : ''}. `
          + `Fix the cause, then retry it with POST ${jobPath}/retry, or replay it with the queue's other dead letters with POST ${api('/jobs/dlq/retry')}.`,
      });
      break;
    case 'failed':
      add({
        code: 'failed', blocking: true, last_error: f.last_error, retry_count: f.retry_count, max_retries: f.max_retries, completed_at: iso(f.completed_at!),
        message: `It failed for good at ${iso(f.completed_at!)}${f.last_error ? ` (last error: ${quoted(f.last_error)})` : ''}. Fix the cause, then retry it with POST ${jobPath}/retry.`,
      });
      break;
    case 'cancelled':
      if (f.expires_at !== null && f.completed_at !== null && f.completed_at.getTime() >= f.expires_at.getTime()) {
        add({
          code: 'expired', blocking: true, expires_at: iso(f.expires_at), completed_at: iso(f.completed_at),
          message: `It expired: its expires_at (${iso(f.expires_at)}) passed before a worker started it, so it was cancelled at ${iso(f.completed_at)}. `
            + `If it is still wanted, enqueue it again (POST ${api('/jobs')}) with a later expires_at, and make sure a worker serves queue "${queue}".`,
        });
      } else {
        add({
          code: 'cancelled', blocking: true, completed_at: f.completed_at ? iso(f.completed_at) : null,
          message: `It was cancelled${f.completed_at ? ` at ${iso(f.completed_at)}` : ''} and will not run. A cancelled job cannot be retried: enqueue it again (POST ${api('/jobs')}) to run it.`,
        });
      }
      break;
    case 'processing': {
      const until = f.lease_expires_at!;
      const cancel = f.cancel_requested_at ? ` Cancellation was requested at ${iso(f.cancel_requested_at)}: the worker is told at its next heartbeat and should stop.` : '';
      add({
        code: 'leased', blocking: true, until: iso(until), worker_id: f.assigned_worker_id, cancel_requested: f.cancel_requested_at !== null,
        message: until.getTime() > now
          ? `It is running on worker "${f.assigned_worker_id}", which holds its lease until ${iso(until)} (each heartbeat extends it). If that worker died, the job returns to pending once the lease runs out.${cancel}`
          : `Its lease from worker "${f.assigned_worker_id}" ran out at ${iso(until)} without a heartbeat: the lease reaper takes it back within moments (it is retried if retries remain).${cancel}`,
      });
      break;
    }
    case 'pending':
    case 'scheduled': {
      if (f.expires_at !== null && f.expires_at.getTime() <= now) {
        add({
          code: 'expired', blocking: true, expires_at: iso(f.expires_at),
          message: `Its expires_at (${iso(f.expires_at)}) passed before a worker started it: it will not run, and the expirer cancels it within moments. `
            + `If it is still wanted, enqueue it again (POST ${api('/jobs')}) with a later expires_at.`,
        });
      }
      if (!f.enabled) {
        const since = f.paused_at ? ` since ${iso(f.paused_at)}` : '';
        add({
          code: 'queue_paused', blocking: true, queue_name: queue, paused_at: f.paused_at ? iso(f.paused_at) : null, pause_reason: f.pause_reason,
          message: `Queue "${queue}" is paused${since}${f.pause_reason ? ` (reason: ${quoted(f.pause_reason)})` : ''}, so no claim takes its jobs; resume it with POST ${api(`/queues/${encodeURIComponent(queue)}/resume`)}.`,
        });
      }
      if (f.dependencies_met === false) explainDependencies(f, options.canSee, add);
      if (f.in_backoff || (f.status === 'pending' && f.retry_count > 0 && f.scheduled_at !== null && f.scheduled_at.getTime() > now)) {
        const until = f.scheduled_at!;
        // A snooze (POST /jobs/{id}/snooze) waits like a retry's backoff; its history says which it is
        // (and with no failed attempt yet, nothing else waits like this).
        const snoozed = f.last_event === 'snooze' || f.retry_count === 0;
        const attempt = `Attempt ${f.retry_count} of ${f.max_retries + 1} failed${f.last_error ? ` (${quoted(f.last_error)})` : ''}`;
        add({
          code: snoozed ? 'snoozed' : 'in_backoff', blocking: true, until: iso(until), retry_count: f.retry_count, max_retries: f.max_retries, last_error: f.last_error,
          message: snoozed
            ? (until.getTime() > now
              ? `Its worker snoozed it (no attempt used) until ${iso(until)}; it runs again then. Nothing to do.`
              : `Its worker snoozed it until ${iso(until)}; it becomes claimable within moments.`)
            : until.getTime() > now
              ? `${attempt}; it waits out its retry backoff until ${iso(until)}, then runs again. Nothing to do unless the wait is too long: the queue's backoff_base_ms and backoff_max_ms (PUT ${configPath(queue)}) set it for later failures.`
              : `${attempt}; its retry backoff ended at ${iso(until)} and it becomes claimable within moments.`,
        });
      } else if (f.job_key_mode === 'debounce' && (f.status === 'scheduled' || (f.scheduled_at !== null && f.scheduled_at.getTime() > now))) {
        const until = f.scheduled_at!;
        add({
          code: 'debounced', blocking: true, until: iso(until), job_key: f.job_key,
          message: until.getTime() > now
            ? `Its job key ${quoted(f.job_key ?? '')} debounces it: it runs at ${iso(until)}, and each enqueue with that key before then replaces its payload and pushes that time back by the key's window_secs (never past max_wait_secs after the first). Nothing to do; to run it now, enqueue without the key or cancel it.`
            : `Its debounce window with job key ${quoted(f.job_key ?? '')} ended at ${iso(until)}: the scheduler makes it pending within moments.`,
        });
      } else if (f.status === 'scheduled' || (f.scheduled_at !== null && f.scheduled_at.getTime() > now)) {
        const until = f.scheduled_at!;
        add({
          code: 'scheduled', blocking: true, until: iso(until),
          message: until.getTime() > now
            ? `It is scheduled for ${iso(until)} and becomes claimable then; nothing to do until that time. To run it sooner, cancel it (DELETE ${jobPath}) and enqueue it again without scheduled_at.`
            : `It was due at ${iso(until)}: the scheduler makes it pending within moments.`,
        });
      }
      if (f.claimable) capacityBlocked = explainCapacity(f, add);
      const known = reasons.some((r) => r.blocking);
      if (!f.claimable && !known) {
        // Every condition of spool.claimable_jobs is explained above; this
        // is only reached if the view gains one this code does not know yet.
        add({ code: 'not_claimable', blocking: true, message: `The claim does not take it right now for a reason this check does not name; its status is ${f.status}. Ask again in a moment.` });
      }
      if (f.live_workers === 0) {
        const minutes = Math.round(options.silenceMs / 60_000);
        add({
          code: 'no_live_workers', blocking: false, queue_name: queue,
          message: `No worker serving queue "${queue}" has sent a heartbeat in the last ${minutes >= 1 ? plural(minutes, 'minute') : plural(Math.round(options.silenceMs / 1000), 'second')}: `
            + `nothing may be claiming it. Start a worker for "${queue}" (POST ${api('/workers/register')}, then POST ${api('/jobs/claim')}), or check GET ${api('/workers')}.`,
        });
      }
      break;
    }
  }

  const runnable = f.status === 'pending' && f.claimable && f.enabled && !capacityBlocked;
  if (runnable && f.ahead !== null) {
    const capped = f.ahead >= EXPLAIN_AHEAD_CAP;
    add({
      code: 'queued_behind', blocking: false, queue_name: queue, ahead: f.ahead, ahead_capped: capped,
      message: f.fairness !== null
        // A fair queue's order depends on the turns claims take across keys: an estimate (docs/jobs-api.md, "Explain").
        ? (f.ahead === 0
          ? `It can be claimed now and is about next in line: queue "${queue}" shares claims across fairness keys, so this is an estimate.`
          : `It can be claimed now; ${capped ? `at least about ${plural(f.ahead, 'job')} are` : `about ${plural(f.ahead, 'job')} ${f.ahead === 1 ? 'is' : 'are'}`} ahead of it in queue "${queue}" `
            + `(an estimate: higher priority first, then its key's older jobs and the other keys' jobs in the turns before its own, as fair share takes turns across fairness keys). `
            + `More workers, or a higher priority (PUT ${jobPath}/priority), get it sooner.`)
        : f.ahead === 0
        ? `It can be claimed now and is next in line: the next claim on queue "${queue}" (POST ${api('/jobs/claim')}) takes it.`
        : `It can be claimed now; ${capped ? `at least ${plural(f.ahead, 'job')} are` : f.ahead === 1 ? '1 job is' : `${plural(f.ahead, 'job')} are`} ahead of it in queue "${queue}" (higher priority first, then older). `
          + `Claims take it after ${f.ahead === 1 ? 'that one' : 'them'}; more workers, or a higher priority (PUT ${jobPath}/priority), get it sooner.`,
    });
  }
  return { job_id: f.id, queue_name: queue, status: f.status, runnable, reasons, checked_at: iso(f.checked_at) };
}

function explainDependencies(f: JobExplainFacts, canSee: (queueName: string) => boolean, add: (reason: ExplainReason) => void): void {
  const facts = f.dependencies ?? { count: 0, items: [] };
  const jobPath = api(`/jobs/${f.id}`);
  const visible = facts.items.filter((d) => d.queue_name === null || canSee(d.queue_name));
  const hidden = facts.items.length - visible.length;
  const more = facts.count - facts.items.length;
  const dead = visible.filter((d) => DEAD_DEPENDENCY.has(d.status));
  const waiting = visible.filter((d) => !DEAD_DEPENDENCY.has(d.status));
  const mode = f.dependency_mode ?? 'all';
  const unnamed = [hidden > 0 ? `${plural(hidden, 'job')} of queues this key cannot read` : '', more > 0 ? `${more.toLocaleString('en-US')} more` : ''].filter(Boolean).join(' and ');
  const list = (items: DependencyFact[]) => items.slice(0, 10).map((d) => d.job_id).join(', ') + (items.length > 10 ? `, and ${items.length - 10} more` : '');

  // Mode all: one dead dependency is enough to block for good; mode any: only when none is left to wait for.
  if (dead.length > 0 && (mode === 'all' || (waiting.length === 0 && hidden === 0 && more === 0))) {
    const described = dead.slice(0, 10).map((d) => `${d.job_id} (${d.status === null ? 'deleted' : d.status})`).join(', ') + (dead.length > 10 ? `, and ${dead.length - 10} more` : '');
    const retryable = dead.find((d) => d.status === 'deadletter' || d.status === 'failed');
    add({
      code: 'blocked_by_failed_dependency', blocking: true, dependency_mode: mode,
      dependencies: dead.map((d) => ({ job_id: d.job_id, status: d.status })),
      message: `It depends on ${dead.length === 1 ? 'a job that' : 'jobs that'} will never complete on ${dead.length === 1 ? 'its' : 'their'} own: ${described}, so it stays blocked. `
        + (retryable
          ? `Fix the cause and retry ${dead.length === 1 ? 'it' : 'them'} (POST ${api(`/jobs/${retryable.job_id}/retry`)}): this job is released when ${mode === 'all' ? 'all of its dependencies have' : 'one of its dependencies has'} completed. `
          : 'A cancelled or deleted job cannot be retried. ')
        + `Otherwise cancel this job with DELETE ${jobPath}.`,
    });
  }
  if (waiting.length > 0 || ((hidden > 0 || more > 0) && dead.length === 0)) {
    const total = waiting.length + hidden + more;
    add({
      code: 'dependencies_pending', blocking: true, dependency_mode: mode, waiting_count: total,
      dependencies: waiting.map((d) => ({ job_id: d.job_id, status: d.status })),
      message: `It waits for ${mode === 'any' ? `one of ${plural(total, 'dependency', 'dependencies')}` : plural(total, 'dependency', 'dependencies')} to complete`
        + `${waiting.length > 0 ? `: ${list(waiting)}` : ''}${unnamed ? `${waiting.length > 0 ? ', and ' : ': '}${unnamed}` : ''}. `
        + `It is released by itself when ${total === 1 ? 'that one completes' : mode === 'any' ? 'one of them completes' : 'they have all completed'}; see GET ${jobPath}/dependencies.`,
    });
  }
}

/** The queue's caps, for a job the claim would otherwise take now. True when one of them stops it. */
function explainCapacity(f: JobExplainFacts, add: (reason: ExplainReason) => void): boolean {
  const queue = f.queue_name;
  let blocked = false;
  if (f.concurrency_limit !== null && f.processing_count !== null && f.processing_count >= f.concurrency_limit) {
    blocked = true;
    add({
      code: 'concurrency_limit', blocking: true, queue_name: queue, limit: f.concurrency_limit, running: f.processing_count,
      message: `Queue "${queue}" already has ${plural(f.processing_count, 'job')} processing, its concurrency_limit of ${f.concurrency_limit}: it starts when one of them finishes. `
        + `To run more at once, raise concurrency_limit with PUT ${configPath(queue)}.`,
    });
  }
  if (f.concurrency_key !== null && f.concurrency_key_limit !== null && f.key_running !== null && f.key_running >= f.concurrency_key_limit) {
    blocked = true;
    add({
      code: 'concurrency_key_full', blocking: true, queue_name: queue, concurrency_key: f.concurrency_key, limit: f.concurrency_key_limit, running: f.key_running,
      message: `Queue "${queue}" runs at most ${plural(f.concurrency_key_limit, 'job')} per concurrency_key (concurrency_key_limit), and ${plural(f.key_running, 'job')} with key ${quoted(f.concurrency_key)} ${f.key_running === 1 ? 'is' : 'are'} processing: `
        + `it starts when one of them finishes (jobs of other keys go ahead meanwhile). To run more per key, raise concurrency_key_limit with PUT ${configPath(queue)}.`,
    });
  }
  if (f.rate_limit !== null && f.rate_available !== null && f.rate_available < 1) {
    blocked = true;
    // Claims take whole tokens: the next claim can start one when the bucket is back to 1.
    const until = new Date(f.checked_at.getTime() + Math.ceil(((1 - f.rate_available) / f.rate_limit) * 1000));
    add({
      code: 'rate_limited', blocking: true, until: iso(until), queue_name: queue, rate_limit: f.rate_limit, burst: f.rate_burst, tokens_available: Math.max(0, f.rate_available),
      message: `Queue "${queue}" is rate limited to ${plural(f.rate_limit, 'job')} started per second (burst ${f.rate_burst}), and its token bucket is empty: the next token comes at ${iso(until)}. `
        + `To start jobs faster, raise rate_limit or rate_limit_burst with PUT ${configPath(queue)}.`,
    });
  }
  return blocked;
}
