/**
 * The chaos verdict (reliability/chaos-check.ts) on made-up histories: it
 * must catch what a real run can only hope never to see.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkChaos, type Effect, type HistoryEvent } from '../../../reliability/chaos-check.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const ev = (job: string, event: string, lease: string | null, s: number, from: string | null, to: string): HistoryEvent => ({ job_id: job, event, lease_id: lease, created_at: at(s), from_status: from, to_status: to });
const run = (job: string, lease: string | null, start: number, end: number | null, worker = 'w'): Effect => ({ job_id: job, lease_id: lease, worker, started_at: at(start), finished_at: end === null ? null : at(end) });

describe('chaos verdict', () => {
  it('a clean run: one claim, one execution, completed', () => {
    const v = checkChaos(['j'], [{ id: 'j', status: 'completed' }], [ev('j', 'create', null, 0, null, 'pending'), ev('j', 'claim', 'L1', 1, 'pending', 'processing'), ev('j', 'complete', 'L1', 2, 'processing', 'completed')], [run('j', 'L1', 1, 2)]);
    assert.deepEqual([v.completed, v.lost, v.liveOverlap, v.reexecutedAfterExpiry], [1, 0, 0, 0]);
  });

  it('a second execution after an expired lease is explained, even when the zombie still ran', () => {
    const history = [ev('j', 'claim', 'L1', 1, 'pending', 'processing'), ev('j', 'lease_expired', 'L1', 7, 'processing', 'pending'), ev('j', 'claim', 'L2', 8, 'pending', 'processing'), ev('j', 'complete', 'L2', 9, 'processing', 'completed')];
    const v = checkChaos(['j'], [{ id: 'j', status: 'completed' }], history, [run('j', 'L1', 1, 10), run('j', 'L2', 8, 9)]);
    assert.deepEqual([v.lost, v.liveOverlap, v.reexecutedAfterExpiry, v.overlappingAfterExpiry], [0, 0, 1, 1]);
  });

  it('two live leases at once, a second execution after a completion, an unknown lease, a lease run twice', () => {
    const overlap = [ev('a', 'claim', 'A1', 1, 'pending', 'processing'), ev('a', 'claim', 'A2', 2, 'pending', 'processing'), ev('a', 'complete', 'A2', 3, 'processing', 'completed')];
    assert.equal(checkChaos(['a'], [{ id: 'a', status: 'completed' }], overlap, [run('a', 'A2', 2, 3)]).liveOverlap, 1);
    const afterComplete = [ev('b', 'claim', 'B1', 1, 'pending', 'processing'), ev('b', 'complete', 'B1', 2, 'processing', 'completed'), ev('b', 'retry', null, 3, 'completed', 'pending'), ev('b', 'claim', 'B2', 4, 'pending', 'processing'), ev('b', 'complete', 'B2', 5, 'processing', 'completed')];
    assert.equal(checkChaos(['b'], [{ id: 'b', status: 'completed' }], afterComplete, [run('b', 'B1', 1, 2), run('b', 'B2', 4, 5)]).liveOverlap, 1);
    const simple = [ev('c', 'claim', 'C1', 1, 'pending', 'processing'), ev('c', 'complete', 'C1', 2, 'processing', 'completed')];
    assert.equal(checkChaos(['c'], [{ id: 'c', status: 'completed' }], simple, [run('c', 'ZZ', 1, 2)]).liveOverlap, 1);
    assert.equal(checkChaos(['c'], [{ id: 'c', status: 'completed' }], simple, [run('c', 'C1', 1, 2), run('c', 'C1', 1, 2, 'other')]).liveOverlap, 1);
  });

  it('lost: not completed, missing, or completed without an execution', () => {
    const v = checkChaos(['p', 'm', 'n'], [{ id: 'p', status: 'pending' }, { id: 'n', status: 'completed' }], [], []);
    assert.equal(v.lost, 3);
    assert.equal(v.completed, 1);
  });
});
