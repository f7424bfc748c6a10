import type { AppContext } from '../app.js';
import type { AuthContext } from './auth.js';
import { enforceJobLimits, type JobQuota } from './plan-limits.js';

/** What plan limits need to know about jobs about to be created. */
export interface JobAdmission {
  queueName: string;
  payloadBytes: number;
}

/**
 * The one place where new jobs meet plan limits (CONTRACT §3.14: active jobs,
 * jobs per day, payload size → 403 LIMIT_EXCEEDED). POST /jobs and POST
 * /jobs/bulk call it after validation and before inserting; it throws
 * LimitExceededError to refuse the whole request. The returned quota must be
 * settled with the number of jobs really created, so that idempotent repeats
 * (and failed inserts) give their share of the daily quota back.
 */
export async function admitJobs(ctx: AppContext, auth: AuthContext, jobs: readonly JobAdmission[]): Promise<JobQuota> {
  const largest = jobs.reduce((max, job) => Math.max(max, job.payloadBytes), 0);
  return enforceJobLimits(ctx, auth, jobs.length, largest);
}
