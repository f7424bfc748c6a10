/** `spool jobs …` and `spool dlq …`. */
import { Command, Option } from 'commander';
import { JOB_STATUSES, NotFoundError, type JobStatus, type JobSummary } from '@spool/sdk';
import { CommandFailed, contextFor, intIn, UsageError, type Context } from '../context.js';
import { details, shortTime, table, type Column } from '../output.js';
import { replayCommand, replaysCommand } from './dlq-replays.js';

const JOB_COLUMNS: Column<JobSummary>[] = [
  { header: 'ID', value: (job) => job.id },
  { header: 'QUEUE', value: (job) => job.queueName },
  { header: 'STATUS', value: (job) => job.status },
  { header: 'PRIORITY', value: (job) => job.priority, right: true },
  { header: 'RETRIES', value: (job) => job.retryCount, right: true },
  { header: 'CREATED', value: (job) => shortTime(job.createdAt) },
  { header: 'COMPLETED', value: (job) => shortTime(job.completedAt) },
];

function limitOption(): Option {
  return new Option('--limit <n>', 'rows to show (1-100)').argParser(intIn(1, 100)).default(50);
}

export function jobsCommand(): Command {
  const jobs = new Command('jobs').description('list, inspect, cancel and retry jobs');

  jobs
    .command('list')
    .description('list jobs, newest first')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(new Option('-s, --status <status>', 'only this status').choices(JOB_STATUSES))
    .addOption(limitOption())
    .addOption(new Option('--offset <n>', 'rows to skip').argParser(intIn(0, 1_000_000)).default(0))
    .action(async (opts: { queue?: string; status?: JobStatus; limit: number; offset: number }, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.jobs.list({ queueName: opts.queue, status: opts.status, limit: opts.limit, offset: opts.offset });
      ctx.print(rows, () => table(rows, JOB_COLUMNS, 'No jobs.'));
    });

  jobs
    .command('get <id>')
    .description('show one job with its payload, result and last error')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const job = await ctx.client.jobs.get(id);
      ctx.print(job, () => details(job));
    });

  jobs
    .command('cancel <id>')
    .description('cancel a pending or scheduled job (a running job is asked to stop)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const outcome = await ctx.client.jobs.cancel(id);
      ctx.print({ id, outcome }, () =>
        outcome === 'cancelled' ? `Cancelled job ${id}.` : `Job ${id} is running: cancellation requested; its worker is told and stops it.`,
      );
    });

  jobs
    .command('retry <id>')
    .description('move a failed or dead-lettered job back to pending')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const job = await ctx.client.jobs.retry(id);
      ctx.print(job, () => `Job ${job.id} is ${job.status} again (retry count ${job.retryCount}).`);
    });

  return jobs;
}

/** The server's largest `POST /jobs/dlq/retry` batch. */
const RETRY_BATCH = 100;
/** Purge batches: small enough to draw progress, large enough to be quick. */
const PURGE_BATCH = 1000;

/** Why each of `ids` was not retried: its status, or that it does not exist (for the first 20). */
async function whyNotRetried(ctx: Context, ids: string[]): Promise<{ id: string; status: string }[]> {
  return Promise.all(
    ids.slice(0, 20).map(async (id) => {
      try {
        return { id, status: (await ctx.client.jobs.get(id)).status as string };
      } catch (err) {
        if (err instanceof NotFoundError) return { id, status: 'not found' };
        throw err;
      }
    }),
  );
}

async function retryIds(ctx: Context, ids: string[]): Promise<{ retriedCount: number; retriedJobs: string[] }> {
  // One request needs no bar.
  const progress = ids.length > RETRY_BATCH ? ctx.progress(ids.length) : null;
  const retried: string[] = [];
  for (let i = 0; i < ids.length; i += RETRY_BATCH) {
    const answer = await ctx.client.dlq.retry({ jobIds: ids.slice(i, i + RETRY_BATCH) });
    retried.push(...answer.retriedJobs);
    progress?.update(Math.min(ids.length, i + RETRY_BATCH));
  }
  progress?.finish(ids.length);
  const answer = { retriedCount: retried.length, retriedJobs: retried };
  const done = new Set(retried.map((id) => id.toLowerCase()));
  const missed = ids.filter((id) => !done.has(id.toLowerCase()));
  if (missed.length > 0) {
    // What did happen is still printed (stdout), then the refusal (stderr, exit 1).
    if (retried.length > 0) ctx.print(answer, () => `Retried ${retried.length} job(s):\n${retried.join('\n')}`);
    const reasons = await whyNotRetried(ctx, missed);
    const listed = reasons.map((r) => `${r.id} (${r.status})`).join(', ');
    const more = missed.length > reasons.length ? ` and ${missed.length - reasons.length} more` : '';
    throw new CommandFailed(
      'NOT_DEAD_LETTERED',
      `${missed.length === 1 ? 'this job is' : `${missed.length} jobs are`} not dead-lettered, nothing done for ${missed.length === 1 ? 'it' : 'them'}: ${listed}${more}. ` +
        'Only dead-lettered jobs are replayed (`spool dlq list`); a failed job is retried with `spool jobs retry <id>`.',
      { not_retried: reasons, retried_jobs: retried },
    );
  }
  return answer;
}

/** Replays the oldest dead letters batch by batch, up to `limit` (all when absent). */
async function retryOldest(ctx: Context, queueName: string | undefined, limit: number | undefined): Promise<{ retriedCount: number; retriedJobs: string[] }> {
  const total = limit ?? (queueName ? null : (await ctx.client.jobs.stats()).deadletter);
  const progress = ctx.progress(total);
  const retried: string[] = [];
  const seen = new Set<string>();
  for (;;) {
    const want = Math.min(RETRY_BATCH, (limit ?? Infinity) - retried.length);
    if (want <= 0) break;
    const answer = await ctx.client.dlq.retry({ queueName, limit: want });
    // A job that fails again at once comes back to the DLQ: stop instead of replaying it forever.
    const again = answer.retriedJobs.some((id) => seen.has(id));
    for (const id of answer.retriedJobs) seen.add(id);
    retried.push(...answer.retriedJobs);
    progress.update(retried.length);
    if (answer.retriedCount < want || again) break;
  }
  progress.finish(retried.length);
  return { retriedCount: retried.length, retriedJobs: retried };
}

export function dlqCommand(): Command {
  const dlq = new Command('dlq').description('inspect, replay and purge the dead-letter queue');

  dlq
    .command('list')
    .description('list dead-lettered jobs, newest first, with the error that put them there')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(limitOption())
    .action(async (opts: { queue?: string; limit: number }, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.dlq.list({ queueName: opts.queue, limit: opts.limit });
      ctx.print(rows, () =>
        table(rows, [...JOB_COLUMNS, { header: 'ERROR', value: (job) => (job as JobSummary & { lastError?: string | null }).lastError }], 'The dead-letter queue is empty.'),
      );
    });

  dlq
    .command('retry [ids...]')
    .description('move dead-lettered jobs back to pending: the given ids (an id that is not dead-lettered is an error), else all of --queue, else all; --limit caps it')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(new Option('--limit <n>', 'at most this many, oldest first').argParser(intIn(1, 10_000_000)))
    .action(async (ids: string[], opts: { queue?: string; limit?: number }, command: Command) => {
      if (ids.length > 0 && (opts.queue !== undefined || opts.limit !== undefined)) throw new UsageError('give job ids or --queue/--limit, not both');
      const ctx = contextFor(command);
      const answer = ids.length > 0 ? await retryIds(ctx, ids) : await retryOldest(ctx, opts.queue, opts.limit);
      ctx.print(answer, () =>
        answer.retriedCount === 0
          ? `The dead-letter queue${opts.queue ? ` of ${opts.queue}` : ''} is empty: nothing retried.`
          : `Retried ${answer.retriedCount} job(s):\n${answer.retriedJobs.join('\n')}`,
      );
    });

  dlq
    .command('purge')
    .description('delete dead-lettered jobs for good (all that match, in batches, unless --limit)')
    .option('-q, --queue <name>', 'only this queue')
    .option('--older-than <time>', 'only jobs created before this ISO time')
    .addOption(new Option('--limit <n>', 'at most this many').argParser(intIn(1, 10_000_000)))
    .option('-y, --yes', 'confirm the deletion')
    .action(async (opts: { queue?: string; olderThan?: string; limit?: number; yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new UsageError('purge deletes jobs for good: add --yes to confirm');
      if (opts.olderThan !== undefined && Number.isNaN(Date.parse(opts.olderThan))) throw new UsageError(`--older-than is not a date: "${opts.olderThan}"`);
      const ctx = contextFor(command);
      const total = opts.limit ?? (opts.queue || opts.olderThan ? null : (await ctx.client.jobs.stats()).deadletter);
      const progress = ctx.progress(total);
      let purged = 0;
      for (;;) {
        const want = Math.min(PURGE_BATCH, (opts.limit ?? Infinity) - purged);
        if (want <= 0) break;
        const answer = await ctx.client.dlq.purge({ queueName: opts.queue, olderThan: opts.olderThan, limit: want, confirm: true });
        purged += answer.purgedCount;
        progress.update(purged);
        if (answer.purgedCount < want) break;
      }
      progress.finish(purged);
      ctx.print({ purgedCount: purged }, () => `Purged ${purged} job(s).`);
    });

  dlq.addCommand(replayCommand());
  dlq.addCommand(replaysCommand());
  return dlq;
}
