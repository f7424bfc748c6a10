import type { DoctorReading } from '@spool/engine';

/**
 * The queue doctor: turns a reading of PostgreSQL (engine databaseDoctor)
 * and the server's own claim timings into checks an operator reads at a
 * glance, each with a status and a hint that says what is wrong and what to
 * do. Thresholds are here, once; docs/observability.md lists them and
 * docs/alerts.yml alerts on the same signals.
 */

export type CheckStatus = 'ok' | 'warn' | 'critical';

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  /** The measured value, in the unit the name says. */
  value: number | null;
  hint: string;
}

export interface ServerTimings {
  /** Estimated p99 of the claim statement in this process over its lifetime, in ms; null before any claim. */
  claimP99Ms: number | null;
  /** Expired leases the reaper reclaimed in the last hour, as far as this process has counted (while /metrics or the doctor is read). */
  leasesExpiredLastHour: number;
}

const MINUTE = 60;
export const THRESHOLDS = {
  transactionAgeWarnSeconds: 5 * MINUTE,
  transactionAgeCriticalSeconds: 30 * MINUTE,
  idleInTransactionWarnSeconds: MINUTE,
  preparedWarnSeconds: 5 * MINUTE,
  deadTuplesWarn: 100_000,
  /** Dead tuples beyond this share of live ones, with no autovacuum for an hour. */
  deadShareWarn: 0.2,
  autovacuumStaleSeconds: 60 * MINUTE,
  claimP99WarnMs: 50,
  claimP99CriticalMs: 500,
  leasesExpiredWarnPerHour: 10,
} as const;

function duration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * MINUTE) return `${Math.round(seconds / MINUTE)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function transactionCheck(reading: DoctorReading): DoctorCheck {
  const holder = reading.oldest_transaction;
  if (!holder) return { name: 'oldest_transaction_age_seconds', status: 'ok', value: 0, hint: 'No other session holds a transaction open: vacuum can clean up behind the queue.' };
  const age = holder.age_seconds;
  const status: CheckStatus = age >= THRESHOLDS.transactionAgeCriticalSeconds ? 'critical' : age >= THRESHOLDS.transactionAgeWarnSeconds ? 'warn' : 'ok';
  const who = `session ${holder.pid} (application "${holder.application_name || 'unnamed'}", ${holder.state ?? 'unknown state'}${holder.client_addr ? `, from ${holder.client_addr}` : ''}) since ${holder.xact_start}`;
  const hint = status === 'ok'
    ? `The oldest open transaction is ${duration(age)} old: ${who}.`
    : `A transaction has held back cleanup for ${duration(age)}: ${who}. Until it ends, the rows of every job claimed or finished since stay in the tables and the claim index, and claims slow down. End it (SELECT pg_terminate_backend(${holder.pid})) or set idle_in_transaction_session_timeout for that application.`;
  return { name: 'oldest_transaction_age_seconds', status, value: age, hint };
}

function idleCheck(reading: DoctorReading): DoctorCheck {
  const longest = reading.idle_in_transaction_longest_seconds ?? 0;
  const status: CheckStatus = reading.idle_in_transaction > 0 && longest >= THRESHOLDS.idleInTransactionWarnSeconds ? 'warn' : 'ok';
  const hint = reading.idle_in_transaction === 0
    ? 'No session is idle in a transaction.'
    : `${reading.idle_in_transaction} session(s) idle in a transaction, the longest for ${duration(longest)}${status === 'warn' ? ': an application opened a transaction and stopped talking; it holds locks and keeps vacuum from cleaning up' : ''}.`;
  return { name: 'idle_in_transaction_sessions', status, value: reading.idle_in_transaction, hint };
}

function preparedCheck(reading: DoctorReading): DoctorCheck {
  const age = reading.oldest_prepared_seconds;
  if (age === null) return { name: 'oldest_prepared_transaction_age_seconds', status: 'ok', value: null, hint: 'No prepared (two-phase) transaction is pending.' };
  const status: CheckStatus = age >= THRESHOLDS.preparedWarnSeconds ? 'warn' : 'ok';
  return { name: 'oldest_prepared_transaction_age_seconds', status, value: age, hint: `A prepared transaction has waited ${duration(age)} for COMMIT PREPARED or ROLLBACK PREPARED (pg_prepared_xacts); it holds back vacuum like an open one.` };
}

function slotCheck(reading: DoctorReading): DoctorCheck {
  const inactive = reading.slots.filter((slot) => !slot.active);
  if (reading.slots.length === 0) return { name: 'replication_slots_holding_xmin', status: 'ok', value: 0, hint: 'No replication slot holds back vacuum.' };
  return {
    name: 'replication_slots_holding_xmin',
    status: inactive.length > 0 ? 'warn' : 'ok',
    value: reading.slots.length,
    hint: inactive.length > 0
      ? `Inactive replication slot(s) ${inactive.map((s) => s.slot_name).join(', ')} hold back vacuum: drop them (pg_drop_replication_slot) if nothing will consume them.`
      : `${reading.slots.length} active replication slot(s) hold an xmin (normal for a standby with hot_standby_feedback).`,
  };
}

function tableChecks(reading: DoctorReading): DoctorCheck[] {
  const now = reading.at.getTime();
  return reading.tables.map((table) => {
    const lastVacuum = [table.last_autovacuum, table.last_vacuum].filter((v): v is string => v !== null).map((v) => Date.parse(v)).sort((a, b) => b - a)[0];
    const sinceVacuum = lastVacuum === undefined ? null : (now - lastVacuum) / 1000;
    const bloated = table.dead_tuples >= THRESHOLDS.deadTuplesWarn && table.dead_tuples > table.live_tuples * THRESHOLDS.deadShareWarn;
    const stale = sinceVacuum === null || sinceVacuum >= THRESHOLDS.autovacuumStaleSeconds;
    const status: CheckStatus = bloated && stale ? 'warn' : 'ok';
    const vacuumed = sinceVacuum === null ? 'never vacuumed' : `last vacuumed ${duration(sinceVacuum)} ago`;
    const hint = status === 'warn'
      ? `spool.${table.table} has ${table.dead_tuples} dead rows (${table.live_tuples} live), ${vacuumed}: something holds back vacuum (see oldest_transaction_age_seconds) or autovacuum cannot keep up; check autovacuum settings for this table.`
      : `spool.${table.table}: ${table.dead_tuples} dead rows, ${table.live_tuples} live, ${vacuumed}.`;
    return { name: `dead_tuples:${table.table}`, status, value: table.dead_tuples, hint };
  });
}

function claimCheck(timings: ServerTimings): DoctorCheck {
  const p99 = timings.claimP99Ms;
  if (p99 === null) return { name: 'claim_p99_ms', status: 'ok', value: null, hint: 'This server has not claimed a job yet.' };
  const status: CheckStatus = p99 >= THRESHOLDS.claimP99CriticalMs ? 'critical' : p99 >= THRESHOLDS.claimP99WarnMs ? 'warn' : 'ok';
  return {
    name: 'claim_p99_ms',
    status,
    value: p99,
    hint: status === 'ok'
      ? `Claims take ${p99.toFixed(1)} ms at p99 on this server.`
      : `Claims take ${p99.toFixed(1)} ms at p99 on this server: usually dead index entries left by a held-back vacuum (see the checks above), or a database short of CPU.`,
  };
}

function leaseCheck(timings: ServerTimings): DoctorCheck {
  const n = timings.leasesExpiredLastHour;
  return {
    name: 'leases_expired_last_hour',
    status: n >= THRESHOLDS.leasesExpiredWarnPerHour ? 'warn' : 'ok',
    value: n,
    hint: n === 0
      ? 'No lease expired in the last hour.'
      : `${n} lease(s) expired in the last hour: workers died or stalled mid-job, or their lease is shorter than their jobs (heartbeat more often or lease longer).`,
  };
}

/** Every check, worst first. */
export function diagnose(reading: DoctorReading, timings: ServerTimings): DoctorCheck[] {
  const rank: Record<CheckStatus, number> = { critical: 0, warn: 1, ok: 2 };
  return [transactionCheck(reading), idleCheck(reading), preparedCheck(reading), slotCheck(reading), ...tableChecks(reading), claimCheck(timings), leaseCheck(timings)]
    .sort((a, b) => rank[a.status] - rank[b.status]);
}
