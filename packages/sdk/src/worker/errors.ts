/**
 * Control flow for handlers: errors a handler throws on purpose, and the
 * reasons a job's `ctx.signal` aborts with.
 */

/**
 * Throw this from a handler to fail the job without retries: it goes
 * straight to the dead-letter queue. Any error with `retryable === false`
 * is treated the same way.
 */
export class NonRetryableError extends Error {
  readonly retryable = false as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/**
 * `ctx.signal.reason` when the job ran longer than its `timeoutSeconds`:
 * noticed by the worker's own timer, or (`enforcedByServer`) told by the
 * server, which enforces a timeout set on the job, its schedule or its
 * queue's config, refuses the attempt's heartbeats from its deadline on, and
 * fails the job itself.
 */
export class JobTimeoutError extends Error {
  readonly timeoutSeconds: number;
  readonly enforcedByServer: boolean;
  constructor(timeoutSeconds: number, options?: { cause?: unknown; enforcedByServer?: boolean }) {
    super(
      options?.enforcedByServer
        ? `Job exceeded its timeout of ${timeoutSeconds} s: the server ended the attempt`
        : `Job exceeded its timeout of ${timeoutSeconds} s`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'JobTimeoutError';
    this.timeoutSeconds = timeoutSeconds;
    this.enforcedByServer = options?.enforcedByServer === true;
  }
}

/**
 * What `ctx.snooze(seconds)` throws (and `ctx.signal.reason` after it): the
 * handler asked to run the job again in `delaySecs` seconds, without using an
 * attempt. Let it propagate (or `return ctx.snooze(…)`); catching it does not
 * undo the snooze.
 */
export class JobSnoozedError extends Error {
  readonly delaySecs: number;
  constructor(delaySecs: number) {
    super(`Job snoozed for ${delaySecs} s`);
    this.name = 'JobSnoozedError';
    this.delaySecs = delaySecs;
  }
}

/** `ctx.signal.reason` when someone cancelled the running job. */
export class JobCancelledError extends Error {
  readonly retryable = false as const;
  constructor(message = 'Job cancelled while running') {
    super(message);
    this.name = 'JobCancelledError';
  }
}

/** `ctx.signal.reason` when the worker lost the job's lease (it may run elsewhere now). */
export class LeaseLostError extends Error {
  constructor(message = 'Lease lost: the job is no longer owned by this worker', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LeaseLostError';
  }
}

/** `ctx.signal.reason` when the worker stopped before the job finished (it will run elsewhere). */
export class WorkerShutdownError extends Error {
  constructor(message = 'Worker shut down before the job finished') {
    super(message);
    this.name = 'WorkerShutdownError';
  }
}

/** True unless the error says it must not be retried. */
export function isRetryable(err: unknown): boolean {
  return !(err !== null && typeof err === 'object' && (err as { retryable?: unknown }).retryable === false);
}

/**
 * The text sent as the job's `error`: "Name: message" plus the first stack
 * frames, cut to `maxLength` (the contract allows 1…2048 characters).
 */
export function describeError(err: unknown, maxLength = 2048, stackFrames = 10): string {
  let text: string;
  if (err instanceof Error) {
    const head = err.message ? `${err.name}: ${err.message}` : err.name || 'Error';
    const frames = (err.stack ?? '')
      .split('\n')
      .filter((line) => line.trimStart().startsWith('at '))
      .slice(0, stackFrames);
    text = [head, ...frames].join('\n');
  } else {
    text = typeof err === 'string' ? err : safeJson(err);
  }
  if (!text.trim()) text = 'Error';
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
