import { jobEnqueue, type InsertedJob, type NewJob } from '@spool/engine';
import type { AppContext } from '../app.js';
import type { AuthContext } from './auth.js';
import { enforceJobLimits, type JobQuota } from './plan-limits.js';

/** What plan limits need to know about jobs about to be created. */
export interface JobAdmission {
  queueName: string;
  payloadBytes: number;
}

/**
 * The one place where new jobs meet plan limits (docs/compatibility.md §3.14: active jobs,
 * jobs per day, payload size → 403 LIMIT_EXCEEDED). POST /jobs and POST
 * /jobs/bulk call it after validation and before inserting; it throws
 * LimitExceededError to refuse the whole request. Insert the jobs on
 * `quota.db` when it is set (enqueueAdmitted does), then settle the quota
 * with the number of jobs really created, always, also after a failed
 * insert: it ends the transaction that holds the organization's jobs lock,
 * and idempotent repeats give their share of the daily quota back.
 */
export async function admitJobs(ctx: AppContext, auth: AuthContext, jobs: readonly JobAdmission[]): Promise<JobQuota> {
  const largest = jobs.reduce((max, job) => Math.max(max, job.payloadBytes), 0);
  return enforceJobLimits(ctx, auth, jobs.length, largest);
}

/** Inserts one admitted job: inside the plan-limit transaction when there is one, else through the shared group commit. */
export async function enqueueAdmitted(ctx: AppContext, quota: JobQuota, job: NewJob): Promise<InsertedJob> {
  if (quota.db) return (await jobEnqueue(quota.db, [job]))[0]!;
  return ctx.enqueueBatcher.enqueue(job);
}
