/** Field limits shared by the API edge, the engine and the SDK (docs/compatibility.md §1.8, §3.4). */
export const LIMITS = {
  queueNameMax: 100,
  priorityMin: -100,
  priorityMax: 100,
  maxRetriesMin: 0,
  maxRetriesMax: 100,
  /** A job's retries when neither it nor its queue's config says (PUT /queues/{name}/config max_retries). */
  maxRetriesDefault: 3,
  timeoutSecondsMin: 1,
  timeoutSecondsMax: 86_400,
  /** A job's timeout when neither it nor its queue's config says (default_timeout). */
  timeoutSecondsDefault: 300,
  idempotencyKeyMax: 255,
  concurrencyKeyMax: 255,
  jobKeyMax: 255,
  /** job_key window_secs and max_wait_secs (debounce, throttle): up to 30 days. */
  jobKeyWindowSecsMax: 2_592_000,
  payloadBytesMax: 1024 * 1024,
  tagsBytesMax: 64 * 1024,
  leaseSecondsMin: 5,
  leaseSecondsMax: 3600,
  leaseSecondsDefault: 30,
  /** A snooze's delay (POST /jobs/{id}/snooze delay_secs): up to a day, like a timeout. */
  snoozeSecondsMin: 1,
  snoozeSecondsMax: 86_400,
  claimLimitMax: 100,
  /** Queues one claim may name (POST /jobs/claim queue_names, extension). */
  claimQueuesMax: 32,
  errorMessageMax: 4096,
  bulkJobsMax: 1000,
  waitMsMax: 30_000,
  /** Nesting of any JSON body (payloads included): deeper values overflow stacks when serialized, and protobuf readers cap recursion. */
  jsonDepthMax: 128,
} as const;

export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** Clamp into [min, max]; used where the contract says "clamped, not rejected". */
export function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
