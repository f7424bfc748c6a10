/**
 * The verdict of a chaos run, from what PostgreSQL recorded: the jobs, their
 * history (every claim opens a lease, every transition out of `processing`
 * closes one) and the handler's effects (one row per execution). Pure: the
 * run loads the rows, this decides, and tests feed it made-up rows.
 */
export interface CheckedJob {
  id: string;
  status: string;
}

export interface HistoryEvent {
  job_id: string;
  event: string;
  from_status: string | null;
  to_status: string | null;
  lease_id: string | null;
  created_at: Date;
}

export interface Effect {
  job_id: string;
  lease_id: string | null;
  worker: string;
  started_at: Date;
  finished_at: Date | null;
}

export interface ChaosVerdict {
  /** Jobs the run enqueued (accepted by the server). */
  jobs: number;
  completed: number;
  /** Enqueued jobs that are not completed, are missing, or completed without any recorded execution. */
  lost: number;
  /** Executions that held a lease at the same time as another of the same job, ran twice under one lease, or cannot be tied to a lease. */
  liveOverlap: number;
  /** Second (and later) executions whose previous lease ended by expiry (the reaper) or was given back for a dead worker. */
  reexecutedAfterExpiry: number;
  /** Second executions after the handler itself failed (a retry, not a chaos effect). */
  reexecutedAfterFailure: number;
  /** Of the re-executions: how many started while the previous execution was still running (a zombie whose lease had expired: fenced). */
  overlappingAfterExpiry: number;
  /** Human-readable details of the first problems found. */
  problems: string[];
}

interface Lease {
  id: string;
  claimedAt: Date;
  endedAt: Date | null;
  endEvent: string | null;
  order: number;
}

const MAX_PROBLEMS = 20;

/** `history` must be in log order (spool.job_events.event_id). */
export function checkChaos(expectedJobIds: readonly string[], jobs: readonly CheckedJob[], history: readonly HistoryEvent[], effects: readonly Effect[]): ChaosVerdict {
  const problems: string[] = [];
  const problem = (message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(message);
  };
  const statusOf = new Map(jobs.map((job) => [job.id, job.status]));
  let liveOverlap = 0;
  let reexecutedAfterExpiry = 0;
  let reexecutedAfterFailure = 0;
  let overlappingAfterExpiry = 0;

  // Leases per job, from the history walk. A claim while another lease of the job is open is two live leases.
  const leasesOf = new Map<string, Map<string, Lease>>();
  const open = new Map<string, Lease>();
  for (const event of history) {
    let leases = leasesOf.get(event.job_id);
    if (!leases) leasesOf.set(event.job_id, (leases = new Map()));
    if (event.event === 'claim') {
      const current = open.get(event.job_id);
      if (current) {
        liveOverlap += 1;
        problem(`job ${event.job_id}: lease ${event.lease_id} claimed while lease ${current.id} was still live`);
      }
      const lease: Lease = { id: event.lease_id ?? '', claimedAt: event.created_at, endedAt: null, endEvent: null, order: leases.size };
      leases.set(lease.id, lease);
      open.set(event.job_id, lease);
    } else if (event.from_status === 'processing') {
      const current = open.get(event.job_id);
      const lease = event.lease_id ? leases.get(event.lease_id) : current;
      if (!lease) {
        problem(`job ${event.job_id}: '${event.event}' ended lease ${event.lease_id} that was never claimed`);
        continue;
      }
      lease.endedAt = event.created_at;
      lease.endEvent = event.event;
      if (current === lease) open.delete(event.job_id);
    }
  }

  const effectsOf = new Map<string, Effect[]>();
  for (const effect of effects) {
    const list = effectsOf.get(effect.job_id);
    if (list) list.push(effect);
    else effectsOf.set(effect.job_id, [effect]);
  }

  let completed = 0;
  let lost = 0;
  for (const id of expectedJobIds) {
    const status = statusOf.get(id);
    const runs = effectsOf.get(id) ?? [];
    if (status === 'completed') completed += 1;
    if (status !== 'completed') {
      lost += 1;
      problem(`job ${id}: ${status === undefined ? 'missing' : `ended ${status}`} after ${runs.length} execution(s)`);
      continue;
    }
    if (runs.length === 0) {
      lost += 1;
      problem(`job ${id}: completed without any recorded execution`);
      continue;
    }
    const leases = leasesOf.get(id) ?? new Map<string, Lease>();
    const byLease = new Map<Lease, Effect[]>();
    for (const run of runs) {
      const lease = run.lease_id ? leases.get(run.lease_id) : undefined;
      if (!lease) {
        liveOverlap += 1;
        problem(`job ${id}: execution by ${run.worker} under lease ${run.lease_id} that the history never granted`);
        continue;
      }
      const same = byLease.get(lease);
      if (same) {
        liveOverlap += 1;
        problem(`job ${id}: lease ${lease.id} executed twice (${same[0]!.worker}, ${run.worker})`);
        same.push(run);
      } else byLease.set(lease, [run]);
    }
    // Consecutive executions: each earlier lease must have ended without completing the job.
    const ordered = [...byLease.entries()].sort(([a], [b]) => a.order - b.order);
    for (let i = 1; i < ordered.length; i++) {
      const [previous, previousRuns] = ordered[i - 1]!;
      const [next, nextRuns] = ordered[i]!;
      if (previous.endEvent === 'lease_expired' || previous.endEvent === 'release') reexecutedAfterExpiry += 1;
      else if (previous.endEvent === 'fail') reexecutedAfterFailure += 1;
      else {
        liveOverlap += 1;
        problem(`job ${id}: executed again under lease ${next.id} although lease ${previous.id} ended '${previous.endEvent ?? 'never'}'`);
        continue;
      }
      const previousEnd = Math.max(...previousRuns.map((run) => (run.finished_at ?? new Date(8.64e15)).getTime()));
      if (nextRuns.some((run) => run.started_at.getTime() < previousEnd)) overlappingAfterExpiry += 1;
    }
  }
  return { jobs: expectedJobIds.length, completed, lost, liveOverlap, reexecutedAfterExpiry, reexecutedAfterFailure, overlappingAfterExpiry, problems };
}
