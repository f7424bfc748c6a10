/**
 * The job life cycle, written down once: JOB_MOVES is the table of allowed
 * status changes. The database enforces the same rows (engine migration 022:
 * spool.job_transitions and the triggers generated from it; a test keeps the
 * two equal), and docs/state-machine.md draws and lists them.
 */
export const JOB_STATUSES = [
  'pending',
  'scheduled',
  'processing',
  'completed',
  'failed',
  'deadletter',
  'cancelled',
] as const;

export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a job never leaves on its own (only a manual retry moves it on). */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'deadletter', 'cancelled'];

/** Statuses that count as "active" for plan limits and queue deletion. */
export const ACTIVE_STATUSES: readonly JobStatus[] = ['pending', 'scheduled', 'processing'];

export function isJobStatus(value: unknown): value is JobStatus {
  return typeof value === 'string' && (JOB_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * One allowed change of a job's status. `from: null` is a status a new job
 * may start in. `events` are the job_history events that make the move.
 */
export interface JobMove {
  readonly from: JobStatus | null;
  readonly to: JobStatus;
  readonly events: readonly string[];
}

/**
 * Every move some operation makes, and nothing else: any other change of
 * status is refused by the database. No move leads to `failed`: a failure
 * with no retry left dead-letters the job; `failed` stays a status of the API
 * contract, and the retry still accepts it.
 */
export const JOB_MOVES = [
  { from: null, to: 'pending', events: ['create'] },
  { from: null, to: 'scheduled', events: ['create'] }, // scheduled_at in the future
  // edit: scheduled_at moved to now or the past; replace: a job_key enqueue gave it a new scheduled_at
  { from: 'scheduled', to: 'pending', events: ['promote', 'edit', 'replace'] },
  // scheduled_at moved to the future: by an edit, or by a job_key enqueue (debounce pushes the run time)
  { from: 'pending', to: 'scheduled', events: ['edit', 'debounce', 'replace'] },
  { from: 'pending', to: 'processing', events: ['claim'] },
  { from: 'processing', to: 'completed', events: ['complete'] },
  // timeout: the server ended an attempt at its deadline (an enforced timeout_seconds)
  // snooze: the handler asked to run again later, without using an attempt
  { from: 'processing', to: 'pending', events: ['fail_retry', 'lease_expired', 'timeout', 'release', 'snooze'] },
  { from: 'processing', to: 'deadletter', events: ['fail_final', 'lease_expired', 'timeout'] },
  // after a cancel request: the failure, lease expiry, timeout, release or snooze ends the job cancelled
  { from: 'processing', to: 'cancelled', events: ['fail_final', 'lease_expired', 'timeout', 'release', 'snooze'] },
  { from: 'pending', to: 'cancelled', events: ['cancel', 'expire'] },
  { from: 'scheduled', to: 'cancelled', events: ['cancel', 'expire'] },
  { from: 'failed', to: 'pending', events: ['retry'] },
  { from: 'deadletter', to: 'pending', events: ['retry'] }, // manual retry or DLQ replay
] as const satisfies readonly JobMove[];

/** The job_history events that change a job's status. */
export type JobTransition = (typeof JOB_MOVES)[number]['events'][number];
