/**
 * The job life cycle, written down once. The database enforces the same set
 * with CHECK constraints (engine migration 001) and docs/state-machine.md
 * draws it.
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

/** Every event that moves a job; each one writes a job_history row. */
export type JobTransition =
  | 'create'
  | 'promote' // scheduled -> pending when scheduled_at is reached
  | 'claim'
  | 'complete'
  | 'fail_retry' // failure with retries left -> pending with backoff
  | 'fail_final' // failure with no retries left -> deadletter
  | 'lease_expired'
  | 'release' // worker deregistered or shut down: back to pending without a retry
  | 'cancel'
  | 'expire'
  | 'retry' // manual retry / DLQ replay
  | 'purge';

/**
 * The allowed moves. `next` returns the statuses a transition may lead to
 * from `from`, or an empty list when the move is illegal. The switch is
 * exhaustive: adding a transition without deciding its moves fails to compile.
 */
export function allowedTargets(from: JobStatus, transition: JobTransition): readonly JobStatus[] {
  switch (transition) {
    case 'create':
      return [];
    case 'promote':
      return from === 'scheduled' ? ['pending'] : [];
    case 'claim':
      return from === 'pending' ? ['processing'] : [];
    case 'complete':
      return from === 'processing' ? ['completed'] : [];
    case 'fail_retry':
      return from === 'processing' ? ['pending'] : [];
    case 'fail_final':
      return from === 'processing' ? ['deadletter', 'cancelled'] : [];
    case 'lease_expired':
      // cancelled: the job's cancellation had been requested before its worker vanished
      return from === 'processing' ? ['pending', 'deadletter', 'cancelled'] : [];
    case 'release':
      return from === 'processing' ? ['pending', 'cancelled'] : [];
    case 'cancel':
      return from === 'pending' || from === 'scheduled' ? ['cancelled'] : [];
    case 'expire':
      return from === 'pending' || from === 'scheduled' ? ['cancelled'] : [];
    case 'retry':
      return from === 'failed' || from === 'deadletter' ? ['pending'] : [];
    case 'purge':
      return from === 'deadletter' ? [] : [];
    default: {
      const unreachable: never = transition;
      throw new Error(`unknown transition ${String(unreachable)}`);
    }
  }
}

/** Initial status of a new job: `scheduled` when it may not run yet. */
export function initialStatus(scheduledAt: Date | null, now: Date): JobStatus {
  return scheduledAt !== null && scheduledAt.getTime() > now.getTime() ? 'scheduled' : 'pending';
}
