/**
 * A Spool worker over gRPC (spooled.v1), the way the Spooled SDK's
 * high-throughput workers run: one StreamJobs stream per loop (the server
 * claims in growing batches of up to 16 while a backlog lasts and pushes
 * the jobs, waiting on NOTIFY when none are due),
 * and a unary Complete per job with the lease id as fencing token. gRPC has
 * no batch complete, so each job costs one Complete round trip over the
 * shared HTTP/2 connection.
 */
import { randomUUID } from 'node:crypto';
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { fromStruct, grpcClient } from '../../test-support/grpc.js';
import { onControl, workerReporter } from '../lib/children.js';

const queueName = process.env.QUEUE ?? 'bench';
const loops = Number(process.env.LOOPS ?? 4);
const client = grpcClient(process.env.SPOOL_GRPC!, process.env.API_KEY!);
const workerId = `bench-grpc-${process.pid}-${randomUUID().slice(0, 8)}`;
const report = workerReporter();
const streams: ClientReadableStream<unknown>[] = [];

interface StreamedJob { id: string; leaseId: string; payload: { fields?: Record<string, unknown> } | null }

function consume(): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = client.queue.StreamJobs({ queueName, workerId, leaseDurationSecs: 300 }, client.metadata()) as ClientReadableStream<StreamedJob>;
    streams.push(stream);
    stream.on('data', (job: StreamedJob) => {
      const t = fromStruct(job.payload)?.t;
      if (typeof t === 'number') report.latency(t);
      client.call('queue', 'Complete', { jobId: job.id, workerId, leaseId: job.leaseId })
        .then((answer: { success: boolean }) => {
          if (!answer.success) throw new Error(`Complete of ${job.id} was refused`);
          report.done(1);
        })
        .catch(reject);
    });
    stream.on('error', (err: ServiceError) => (err.code === 1 /* CANCELLED by stop */ ? resolve() : reject(err)));
    stream.on('end', resolve);
  });
}

const go = onControl(() => {
  for (const stream of streams) stream.cancel();
  report.flush();
});
process.send?.({ type: 'ready' });
await go;
const consuming = Promise.all(Array.from({ length: loops }, () => consume()));
// The streams are open; give the server a moment to park their claims.
setTimeout(() => report.started(), 100);
await consuming.catch((err) => report.error(err));
client.close();
