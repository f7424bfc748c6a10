import type { Static } from 'typebox';
import { ValidationError } from '@spool/protocol';
import type { JobKey } from '@spool/engine';
import { describeValidationError, strictAjv } from './http/validation.js';
import { JobKeyField } from './wire/common.js';

/**
 * A job_key as clients send it (docs/jobs-api.md, "Job keys"): in a REST
 * body, checked by its schema there, or as gRPC call metadata, checked here
 * by the same schema. The rules between its fields are one function for both.
 */
export type JobKeyBody = Static<typeof JobKeyField>;

/** The gRPC metadata that carries a job_key: the REST object as JSON (the proto's Enqueue has no field for it). */
export const JOB_KEY_METADATA = 'spool-job-key';
/** Response metadata of a gRPC Enqueue with a job_key: what the enqueue did (the REST answer's key_outcome). */
export const KEY_OUTCOME_METADATA = 'spool-key-outcome';

/** The rules between a job_key's fields, and with scheduled_at, that JSON Schema cannot say. */
export function checkJobKey(jobKey: JobKeyBody, scheduledAt: string | Date | null | undefined, field: string): void {
  const timed = jobKey.mode === 'debounce' || jobKey.mode === 'throttle';
  if (timed && jobKey.window_secs === undefined) {
    throw new ValidationError(`${field}job_key.window_secs is required with mode ${jobKey.mode}`, { field: `${field}job_key.window_secs` });
  }
  if (!timed && jobKey.window_secs !== undefined) {
    throw new ValidationError(`${field}job_key.window_secs applies to modes debounce and throttle, not ${jobKey.mode}`, { field: `${field}job_key.window_secs` });
  }
  if (jobKey.max_wait_secs !== undefined && jobKey.mode !== 'debounce') {
    throw new ValidationError(`${field}job_key.max_wait_secs applies to mode debounce only`, { field: `${field}job_key.max_wait_secs` });
  }
  if (jobKey.max_wait_secs !== undefined && jobKey.max_wait_secs < jobKey.window_secs!) {
    throw new ValidationError(`${field}job_key.max_wait_secs must be at least window_secs (${jobKey.window_secs})`, { field: `${field}job_key.max_wait_secs` });
  }
  if (jobKey.mode === 'debounce' && scheduledAt) {
    throw new ValidationError(`${field}scheduled_at cannot be combined with job_key mode debounce, which sets the run time (window_secs after the latest enqueue)`, { field: `${field}scheduled_at` });
  }
}

/** The engine's form of a checked job_key. */
export function engineJobKey(jobKey: JobKeyBody): JobKey {
  return { key: jobKey.key, mode: jobKey.mode, windowSecs: jobKey.window_secs ?? null, maxWaitSecs: jobKey.max_wait_secs ?? null };
}

let validateShape: ReturnType<typeof strictAjv.compile> | null = null;

/**
 * The job_key of a gRPC call's `spool-job-key` metadata (null when absent),
 * checked as REST checks a body's: the same schema, the same rules, errors
 * naming the same fields.
 */
export function jobKeyFromMetadata(value: string | null, scheduledAt: Date | null): JobKey | null {
  if (value === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ValidationError(`${JOB_KEY_METADATA} metadata must be a JSON object such as {"key":"user-42","mode":"dedupe"}`, { field: JOB_KEY_METADATA });
  }
  validateShape ??= strictAjv.compile(JobKeyField);
  if (!validateShape(parsed)) {
    // Paths as in a REST body, where the object sits at job_key: "job_key.key must NOT have fewer…".
    const errors = (validateShape.errors ?? []).map((e) => ({ ...e, instancePath: `/job_key${e.instancePath}` }));
    const { message, field } = describeValidationError(errors, 'body');
    throw new ValidationError(message, { field });
  }
  const jobKey = parsed as JobKeyBody;
  checkJobKey(jobKey, scheduledAt, '');
  return engineJobKey(jobKey);
}
