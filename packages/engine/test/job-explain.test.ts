/** explainFacts, the pure half of jobExplain: branches the REST tests do not reach. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXPLAIN_AHEAD_CAP, explainFacts, type JobExplainFacts } from '../src/ops/job-explain.js';

const NOW = new Date('2030-01-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms);

function facts(over: Partial<JobExplainFacts> = {}): JobExplainFacts {
  return {
    id: '01a00000-0000-7000-8000-000000000001', queue_name: 'q', status: 'pending', priority: 0, created_at: ago(60_000),
    scheduled_at: null, expires_at: null, in_backoff: false, retry_count: 0, max_retries: 3, last_error: null, completed_at: null,
    dependencies_met: null, dependency_mode: null, concurrency_key: null, fairness_key: null, assigned_worker_id: null, lease_expires_at: null,
    cancel_requested_at: null, job_key: null, job_key_mode: null, last_event: null, claimable: true, configured: false, enabled: true, paused_at: null, pause_reason: null,
    rate_limit: null, rate_burst: 1, rate_available: null, concurrency_limit: null, concurrency_key_limit: null, fairness: null,
    processing_count: null, key_running: null, dependencies: null, live_workers: 1, ahead: 0, checked_at: NOW,
    ...over,
  };
}
const explain = (f: JobExplainFacts, canSee = (_q: string) => true) => explainFacts(f, { canSee, silenceMs: 120_000 });
const codes = (f: JobExplainFacts) => explain(f).reasons.map((r) => r.code);
const dep = (job_id: string, status: JobExplainFacts['status'] | null) => ({ job_id, status, queue_name: status === null ? null : 'q' });

describe('explainFacts', () => {
  it('names a snooze and a debounce, not a retry backoff or a plain schedule', () => {
    const later = new Date(NOW.getTime() + 30_000);
    const waiting = { status: 'pending' as const, claimable: false, in_backoff: true, scheduled_at: later };
    assert.deepEqual(codes(facts({ ...waiting, retry_count: 1, last_error: 'boom', last_event: 'fail_retry' })), ['in_backoff']);
    const snoozed = explain(facts({ ...waiting, retry_count: 1, last_error: 'boom', last_event: 'snooze' })).reasons;
    assert.deepEqual(snoozed.map((r) => [r.code, r.until]), [['snoozed', later.toISOString()]]);
    assert.match(snoozed[0]!.message, /snoozed it \(no attempt used\)/);
    const scheduled = { status: 'scheduled' as const, claimable: false, scheduled_at: later };
    assert.deepEqual(codes(facts(scheduled)), ['scheduled']);
    const debounced = explain(facts({ ...scheduled, job_key: 'doc-7', job_key_mode: 'debounce' })).reasons;
    assert.deepEqual(debounced.map((r) => [r.code, r.until, r.job_key]), [['debounced', later.toISOString(), 'doc-7']]);
    assert.match(debounced[0]!.message, /each enqueue with that key before then replaces its payload/);
    assert.deepEqual(codes(facts({ ...scheduled, job_key: 'doc-7', job_key_mode: 'dedupe' })), ['scheduled'], 'only debounce pushes the time back');
  });

  it('mode any: a dead dependency blocks only when nothing is left to wait for', () => {
    const blocked = { status: 'pending' as const, claimable: false, dependencies_met: false };
    const both = facts({ ...blocked, dependency_mode: 'any', dependencies: { count: 2, items: [dep('a', 'deadletter'), dep('b', 'processing')] } });
    assert.deepEqual(codes(both), ['dependencies_pending']);
    const dead = facts({ ...blocked, dependency_mode: 'any', dependencies: { count: 2, items: [dep('a', 'cancelled'), dep('b', null)] } });
    assert.deepEqual(codes(dead), ['blocked_by_failed_dependency']);
    assert.match(explain(dead).reasons[0]!.message, /b \(deleted\).*cannot be retried/);
    const all = facts({ ...blocked, dependency_mode: 'all', dependencies: { count: 2, items: [dep('a', 'failed'), dep('b', 'pending')] } });
    assert.deepEqual(codes(all), ['blocked_by_failed_dependency', 'dependencies_pending']);
  });

  it('dependencies of queues the key cannot read are counted, not named', () => {
    const f = facts({ claimable: false, dependencies_met: false, dependencies: { count: 3, items: [dep('a', 'pending'), { job_id: 'secret', status: 'pending', queue_name: 'other' }] } });
    const [reason] = explain(f, (q) => q === 'q').reasons;
    assert.equal(reason!.waiting_count, 3);
    assert.deepEqual(reason!.dependencies, [{ job_id: 'a', status: 'pending' }]);
    assert.doesNotMatch(reason!.message, /secret/);
  });

  it('caps the place in line, and tells a cancelled-by-expiry job from a cancelled one', () => {
    const far = explain(facts({ ahead: EXPLAIN_AHEAD_CAP })).reasons[0]!;
    assert.equal(far.ahead_capped, true);
    assert.match(far.message, /at least 10,000 jobs are ahead/);
    const expired = facts({ status: 'cancelled', claimable: false, expires_at: ago(10_000), completed_at: ago(5_000), ahead: null });
    assert.deepEqual(codes(expired), ['expired']);
    assert.deepEqual(codes({ ...expired, completed_at: ago(20_000) }), ['cancelled']);
  });

  it('a lease that ran out, a backoff that ended and a paused queue with a full bucket', () => {
    const lapsed = explain(facts({ status: 'processing', claimable: false, assigned_worker_id: 'w', lease_expires_at: ago(1000), ahead: null })).reasons[0]!;
    assert.match(lapsed.message, /ran out .* the lease reaper/);
    const backoff = facts({ claimable: false, in_backoff: true, retry_count: 1, scheduled_at: ago(500), ahead: null });
    assert.match(explain(backoff).reasons[0]!.message, /backoff ended at .* within moments/);
    const paused = explain(facts({ enabled: false, paused_at: ago(1000), rate_limit: 5, rate_available: 0.5 }));
    assert.equal(paused.runnable, false);
    assert.deepEqual(paused.reasons.map((r) => r.code), ['queue_paused', 'rate_limited']);
    assert.equal(Date.parse(paused.reasons[1]!.until!) - NOW.getTime(), 100, 'half a token at 5/s is 100 ms away');
  });

  it('no live workers is a hint only', () => {
    const e = explain(facts({ live_workers: 0 }));
    assert.equal(e.runnable, true);
    assert.deepEqual(e.reasons.map((r) => [r.code, r.blocking]), [['no_live_workers', false], ['queued_behind', false]]);
  });
});
