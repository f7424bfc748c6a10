/**
 * The fast variant of `npm run chaos` (reliability/chaos-run.ts): its own
 * embedded PostgreSQL, three replicas behind the round-robin proxy, worker
 * processes, and at least one worker SIGKILL, one server SIGKILL and one
 * PostgreSQL restart while 1,500 jobs run. Nothing may be lost, and no job
 * may run under two live leases.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runChaos } from '../../../reliability/chaos-run.js';

describe('chaos (fast variant of npm run chaos)', () => {
  it('loses no job and never overlaps two live leases while workers, servers and PostgreSQL are killed', { timeout: 300_000 }, async (ctx) => {
    const result = await runChaos({
      jobs: 1500,
      workers: 3,
      timeoutSeconds: 150,
      faultEveryMs: [700, 1500],
      postgresDownMs: [500, 1500],
      postgresEveryMs: 6000,
      progressEveryMs: 5000,
      log: (line) => ctx.diagnostic(line),
    });
    ctx.diagnostic(result.line);
    for (const problem of result.problems) ctx.diagnostic(`problem: ${problem}`);
    assert.ok(result.faults.worker >= 1 && result.faults.server >= 1 && result.faults.postgres >= 1, `faults: ${JSON.stringify(result.faults)}`);
    assert.equal(result.restarts.postgres >= 1, true, 'PostgreSQL came back');
    assert.equal(result.completed, 1500);
    assert.equal(result.lost, 0);
    assert.equal(result.liveOverlap, 0);
  });
});
