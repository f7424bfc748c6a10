/**
 * Three Spool processes on one database with SDK workers spread over them
 * (one worker per replica, in this process). Checks what replicas promise
 * (RELIABILITY.md "Replicas"): no job is held by two live leases, the
 * maintenance services run on exactly one process (the leader), and a
 * realtime client connected to one replica sees the events of jobs enqueued
 * through another and completed through a third. Cron exactly-once across
 * replicas is scheduler-replicas.serial.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jobClaim, organizationCreate } from '@spool/engine';
import { SpoolClient, Worker } from '@spool/sdk';
import { checkChaos, type Effect, type HistoryEvent } from '../../../reliability/chaos-check.js';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';
import { REPLICA_METRICS_TOKEN, startReplica, type Replica } from '../../../test-support/replica.js';
import { openSse, type SseClient } from '../../../test-support/sse.js';

const QUEUE = 'replicated-work';
const JOBS = 600;
const DOOMED = 20;

let t: TestDatabase;
let replicas: Replica[] = [];
let organizationId: string;
let apiKey: string;
const workers: Worker[] = [];
let sse: SseClient | null = null;

before(async () => {
  t = await createTestDatabase('replicas3');
  const slug = `replicas3-${randomBytes(4).toString('hex')}`;
  const created = await organizationCreate(t.pool, { name: slug, slug, planTier: 'unlimited', environment: 'development' });
  organizationId = created.organization.id;
  apiKey = created.apiKey.key;
});

after(async () => {
  sse?.close();
  await Promise.all(workers.map((worker) => worker.stop({ graceMs: 0 })));
  for (const replica of replicas) replica.child.kill('SIGKILL');
  await Promise.all(replicas.map((replica) => replica.exited));
  await t.drop();
});

/** Counter values of `spooled_maintenance_operations_total` on one replica, keyed `service/operation`. */
async function maintenanceCounters(replica: Replica): Promise<Map<string, number>> {
  const text = await (await fetch(`${replica.url}/metrics`, { headers: { authorization: `Bearer ${REPLICA_METRICS_TOKEN}` } })).text();
  const out = new Map<string, number>();
  for (const match of text.matchAll(/^spooled_maintenance_operations_total\{service="([^"]+)",operation="([^"]+)"\} (\S+)$/gm)) {
    out.set(`${match[1]}/${match[2]}`, Number(match[3]));
  }
  return out;
}

const LEADER_SERVICES = ['lease-reaper', 'job-expirer', 'job-statistics', 'worker-liveness', 'job-retention', 'dlq-retention', 'schedule-firer', 'schedule-run-pruner', 'revoked-token-pruner', 'incoming-delivery-pruner'];

describe('three replicas on one database', () => {
  it('spread workers never share a live lease, maintenance runs on the leader only, events reach every replica', async (ctx) => {
    const startedAt = Date.now();
    // Generous start timeout: on a loaded machine a process may take over a minute to compile and start.
    replicas = await Promise.all([0, 1, 2].map(() => startReplica(t.url, { SPOOL_LEADER_TTL_MS: '3000' }, { startTimeoutMs: 180_000 })));
    ctx.diagnostic(`three replicas listening after ${Date.now() - startedAt} ms`);
    const [a, b] = replicas as [Replica, Replica, Replica];
    const client = (replica: Replica) => new SpoolClient({ baseUrl: replica.url, apiKey });

    // Realtime: a client on replica A.
    sse = await openSse(`${a.url}/api/v1/events`, { authorization: `Bearer ${apiKey}` });
    assert.equal(sse.status, 200);

    // Jobs whose "worker" dies holding a 5 s lease: only the leader's reaper can give them back.
    const doomedIds = (await client(b).jobs.bulk({ queueName: QUEUE, jobs: Array.from({ length: DOOMED }, (_, i) => ({ payload: { doomed: i } })) })).succeeded.map((s) => s.jobId);
    const leased = await jobClaim(t.pool, { organizationId, queueName: QUEUE, workerId: 'doomed-worker', limit: DOOMED, leaseSeconds: 5 });
    assert.equal(leased.length, DOOMED);

    // One SDK worker per replica; each execution is recorded with its lease.
    const effects: Effect[] = [];
    for (const [index, replica] of replicas.entries()) {
      const worker = new Worker(client(replica), { queue: QUEUE, concurrency: 8, leaseSeconds: 5, waitMs: 1000, pollIntervalMs: 100, hostname: `replica-${index}` });
      worker.handle(async (job, jobCtx) => {
        const effect: Effect = { job_id: job.id, lease_id: jobCtx.leaseId, worker: `replica-${index}`, started_at: new Date(), finished_at: null };
        effects.push(effect);
        await sleep(Math.random() * 5);
        effect.finished_at = new Date();
        return { by: index };
      });
      worker.on('error', () => {});
      await worker.start();
      workers.push(worker);
    }

    // Enqueued through B in batches, one watched job among them.
    const ids: string[] = [...doomedIds];
    for (let start = 0; start < JOBS; start += 100) {
      const answer = await client(b).jobs.bulk({ queueName: QUEUE, jobs: Array.from({ length: 100 }, (_, k) => ({ payload: { i: start + k } })) });
      ids.push(...answer.succeeded.map((s) => s.jobId));
    }
    const watched = ids[DOOMED + 123]!;

    const drainStarted = Date.now();
    let done = 0;
    while (Date.now() - drainStarted < 40_000) {
      done = (await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND status = 'completed'`, [organizationId, QUEUE])).rows[0]!.n;
      if (done === ids.length) break;
      await sleep(200);
    }
    const drainMs = Date.now() - drainStarted;
    assert.equal(done, ids.length, `all ${ids.length} jobs completed (the doomed ones after their lease expired)`);

    // No two live leases: the history walk and the recorded executions agree (reliability/chaos-check.ts).
    const jobs = (await t.pool.query<{ id: string; status: string }>('SELECT id, status FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2', [organizationId, QUEUE])).rows;
    const history = (await t.pool.query<HistoryEvent>('SELECT job_id, event, from_status, to_status, lease_id, created_at FROM spool.job_events WHERE organization_id = $1 AND queue_name = $2 ORDER BY event_id', [organizationId, QUEUE])).rows;
    const verdict = checkChaos(ids, jobs, history, effects);
    assert.deepEqual(verdict.problems, []);
    assert.equal(verdict.lost, 0);
    assert.equal(verdict.liveOverlap, 0);
    assert.equal(effects.length, ids.length, 'each job ran exactly once (the doomed lease never ran a handler)');
    const claims = history.filter((event) => event.event === 'claim').length;
    const perReplica = [0, 1, 2].map((index) => effects.filter((effect) => effect.worker === `replica-${index}`).length);
    assert.ok(perReplica.every((n) => n > 0), `every replica's worker ran jobs: ${perReplica.join('/')}`);
    ctx.diagnostic(`${ids.length} jobs drained in ${drainMs} ms over three replicas (jobs per replica's worker ${perReplica.join('/')}), ${claims} claims, ${verdict.reexecutedAfterExpiry} re-run after the doomed leases expired, live overlaps ${verdict.liveOverlap}`);
    assert.equal(verdict.reexecutedAfterExpiry, 0, 'no handler ran twice (the doomed claims never ran a handler)');
    assert.equal(history.filter((event) => event.event === 'lease_expired').length, DOOMED, 'the doomed leases, and only they, expired');

    // Maintenance: the one lease holder is the only process whose leader services did anything.
    const holders = (await t.pool.query<{ holder: string }>(`SELECT holder FROM spool.leader_leases WHERE name = 'spool' AND expires_at > now()`)).rows;
    assert.equal(holders.length, 1, 'one leader lease');
    const leaderPid = Number(holders[0]!.holder.split('/')[1]);
    const leader = replicas.find((replica) => replica.pid === leaderPid);
    assert.ok(leader, `the leader ${holders[0]!.holder} is one of the three replicas`);
    const counters = await Promise.all(replicas.map(maintenanceCounters));
    const leaderWork = counters.map((map) => [...map.entries()].filter(([key]) => LEADER_SERVICES.includes(key.split('/')[0]!)));
    for (const [index, work] of leaderWork.entries()) {
      if (replicas[index] === leader) assert.equal(counters[index]!.get('lease-reaper/rescued'), DOOMED, 'the leader reaped every doomed lease');
      else assert.deepEqual(work, [], `follower ${index} ran no leader-only maintenance`);
    }
    ctx.diagnostic(`leader pid ${leaderPid}: ${leaderWork.map((work, i) => `replica ${i}: ${work.map(([k, v]) => `${k}=${v}`).join(', ') || 'none'}`).join('; ')}`);

    // Realtime: enqueued through B, run by the workers of A/B/C, seen on A.
    const seenCreated = await sse.waitFor((e) => e.data.type === 'JobCreated' && e.data.data.job_id === watched, 10_000);
    const seenCompleted = await sse.waitFor((e) => e.data.type === 'JobCompleted' && e.data.data.job_id === watched, 10_000);
    assert.ok(seenCreated && seenCompleted);
    // The stream trails the database by a read interval: give it until every completion has arrived.
    const completions = () => new Set(sse!.events.filter((e) => e.data.type === 'JobCompleted').map((e) => e.data.data.job_id));
    for (const deadline = Date.now() + 10_000; completions().size < ids.length && Date.now() < deadline;) await sleep(50);
    const completedOnA = completions();
    const viaC = effects.filter((e) => e.worker === 'replica-2').map((e) => e.job_id);
    assert.ok(viaC.length > 0 && viaC.every((id) => completedOnA.has(id)), 'A saw the completion of every job completed through C');
    ctx.diagnostic(`SSE client on replica A saw ${completedOnA.size}/${ids.length} completions (jobs enqueued via B, completed via A, B and C)`);
    assert.equal(completedOnA.size, ids.length);
  });
});
