/**
 * `npm run chaos`: 20,000 jobs through three Spool replicas while workers,
 * replicas and PostgreSQL are killed and restarted (reliability/chaos-run.ts).
 * Ends with one line
 *   chaos: jobs=N completed=N lost=0 live_overlap=0 reexecuted_after_expiry=K restarts=R
 * and exits 1 when a job was lost or two live leases overlapped.
 *
 *   npm run chaos -- [--jobs 20000] [--seconds 1800] [--workers 4] [--servers 3]
 *                    [--concurrency 10] [--lease-seconds 5] [--keep]
 */
import { parseArgs } from 'node:util';
import { runChaos } from './chaos-run.js';

function positive(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    console.error(`chaos: --${name} must be an integer ≥ ${min} (got "${raw}")`);
    process.exit(2);
  }
  return value;
}

const { values } = parseArgs({
  options: {
    jobs: { type: 'string' },
    seconds: { type: 'string' },
    workers: { type: 'string' },
    servers: { type: 'string' },
    concurrency: { type: 'string' },
    'lease-seconds': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

// Ctrl-C ends the run early but still checks and cleans up (its processes and PostgreSQL); a second one exits at once.
const interrupt = new AbortController();
const onSignal = () => {
  if (interrupt.signal.aborted) process.exit(130);
  console.error('chaos: interrupted; checking what ran and cleaning up (again to exit at once)');
  interrupt.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const result = await runChaos({
  signal: interrupt.signal,
  jobs: positive('jobs', values.jobs, 20_000),
  timeoutSeconds: positive('seconds', values.seconds, 1800),
  workers: positive('workers', values.workers, 4),
  servers: positive('servers', values.servers, 3),
  concurrency: positive('concurrency', values.concurrency, 10),
  leaseSeconds: positive('lease-seconds', values['lease-seconds'], 5, 5),
  keep: values.keep,
});
for (const problem of result.problems) console.error(`chaos: problem: ${problem}`);
if (!result.drained) console.error(`chaos: stopped (${interrupt.signal.aborted ? 'interrupted' : 'timed out'}) before every job completed: the unfinished ones count as lost`);
console.error(
  `chaos: ${result.jobs} jobs ${result.drained ? 'drained' : 'not drained'} in ${(result.drainMs / 1000).toFixed(1)} s (run ${(result.durationMs / 1000).toFixed(1)} s); ` +
    `restarts: ${result.restarts.workers} workers, ${result.restarts.servers} servers, ${result.restarts.postgres} PostgreSQL; ` +
    `re-executions: ${result.reexecutedAfterExpiry} after an expired or released lease (${result.overlappingAfterExpiry} overlapping a fenced zombie), ${result.reexecutedAfterFailure} after a handler failure; ` +
    `proxy: ${result.proxy.requests} requests, ${result.proxy.refused} refused connections retried, ${result.proxy.badGateway} answered 502`,
);
console.log(result.line);
process.exit(result.lost > 0 || result.liveOverlap > 0 ? 1 : 0);
