import type { AppContext } from '../app.js';
import type { AuthContext } from './auth.js';

/** What plan limits need to know about jobs about to be created. */
export interface JobAdmission {
  queueName: string;
  payloadBytes: number;
}

/**
 * The one place where new jobs meet plan limits (CONTRACT §3.14: active jobs,
 * jobs per day, payload size → 403 LIMIT_EXCEEDED). POST /jobs and POST
 * /jobs/bulk call it after validation and before inserting; it throws
 * LimitExceededError to refuse. Plan enforcement plugs in here; until it
 * does, every validated job is admitted.
 */
export async function admitJobs(_ctx: AppContext, _auth: AuthContext, _jobs: readonly JobAdmission[]): Promise<void> {}
