/**
 * A minimal Spool worker over HTTP (SPOOL_BENCH_WORKER=minimal; the bench's
 * default is the SDK's Worker, spool-sdk-worker.ts): the bare protocol, a few
 * concurrent loops, each claiming up to BATCH jobs with a long poll (wait_ms)
 * and completing them in one batch request (extension), falling back to one
 * contract complete call per job when the batch endpoint is missing.
 */
import { randomUUID } from 'node:crypto';
import { JsonClient, nowMs } from '../lib/http.js';
import { onControl, workerReporter } from '../lib/children.js';

const url = process.env.SPOOL_URL!;
const queue = process.env.QUEUE ?? 'bench';
const loops = Number(process.env.LOOPS ?? 4);
const batch = Number(process.env.BATCH ?? 100);
const waitMs = Number(process.env.WAIT_MS ?? 1000);
const workerId = `bench-${process.pid}-${randomUUID().slice(0, 8)}`;
const client = new JsonClient(url, process.env.API_KEY!, loops * 2);
const report = workerReporter();
let running = true;
let batchComplete = true;

interface Claimed { id: string; lease_id: string | null; payload: { t?: number } | null }

async function complete(jobs: Claimed[]): Promise<void> {
  if (batchComplete) {
    const res = await client.post('/api/v1/jobs/complete', { worker_id: workerId, items: jobs.map((j) => ({ job_id: j.id, lease_id: j.lease_id, result: null })) });
    if (res.status === 200) return;
    if (res.status !== 404 && res.status !== 405) throw new Error(`batch complete answered ${res.status}: ${JSON.stringify(res.body)}`);
    batchComplete = false;
  }
  await Promise.all(jobs.map(async (j) => {
    const res = await client.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: workerId, lease_id: j.lease_id });
    if (res.status !== 200) throw new Error(`complete answered ${res.status}: ${JSON.stringify(res.body)}`);
  }));
}

async function loop(): Promise<void> {
  while (running) {
    const res = await client.post<{ jobs: Claimed[] }>('/api/v1/jobs/claim', { queue_name: queue, worker_id: workerId, limit: batch, lease_duration_secs: 300, wait_ms: waitMs });
    if (res.status !== 200) throw new Error(`claim answered ${res.status}: ${JSON.stringify(res.body)}`);
    const jobs = res.body.jobs;
    if (jobs.length === 0) continue;
    const started = nowMs();
    for (const job of jobs) if (typeof job.payload?.t === 'number') report.latency(job.payload.t, started);
    await complete(jobs);
    report.done(jobs.length);
  }
}

const go = onControl(() => {
  running = false;
  report.flush();
});
process.send?.({ type: 'ready' });
await go;
const consuming = Promise.all(Array.from({ length: loops }, () => loop()));
// The claims are on the wire; give the server a moment to park them.
setTimeout(() => report.started(), 100);
await consuming.catch((err) => {
  report.error(err);
});
