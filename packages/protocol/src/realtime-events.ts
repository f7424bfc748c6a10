/**
 * docs/compatibility.md §4: realtime events travel as PascalCase types (`JobCreated`);
 * the SDKs, the `?events=` filter and webhook subscriptions use dotted names
 * (`job.created`). Types without a PascalCase form (`job.started`,
 * `queue.paused`, …) are their own dotted name.
 */
export const EVENT_NAMES: Readonly<Record<string, string>> = {
  JobStatusChange: 'job.status_changed',
  JobCreated: 'job.created',
  JobCompleted: 'job.completed',
  JobFailed: 'job.failed',
  QueueStats: 'queue.stats',
  WorkerHeartbeat: 'worker.heartbeat',
  WorkerRegistered: 'worker.registered',
  WorkerDeregistered: 'worker.deregistered',
  SystemHealth: 'system.health',
  Ping: 'ping',
  Error: 'error',
};

/** The dotted name of an envelope type (dotted types are their own name). */
export function dottedName(type: string): string {
  return EVENT_NAMES[type] ?? type;
}

/**
 * Every dotted name a realtime stream can carry (docs/realtime.md): what an `?events=` filter can
 * match. A name outside it matches nothing, which the filter's answer says.
 */
export const REALTIME_EVENT_NAMES: readonly string[] = [
  ...Object.values(EVENT_NAMES),
  'job.started', 'job.cancel_requested', 'job.timed_out', 'job.snoozed', 'job.progress', 'job.log',
  'queue.paused', 'queue.resumed', 'schedule.triggered',
];
