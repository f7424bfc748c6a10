/** `spool jobs …` and `spool dlq …`. */
import { Command, Option } from 'commander';
import { JOB_STATUSES, type JobStatus, type JobSummary } from '@spool/sdk';
import { contextFor, intIn, UsageError } from '../context.js';
import { details, shortTime, table, type Column } from '../output.js';

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
      ctx.print(job, () => details(job as unknown as Record<string, unknown>));
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

export function dlqCommand(): Command {
  const dlq = new Command('dlq').description('inspect, replay and purge the dead-letter queue');

  dlq
    .command('list')
    .description('list dead-lettered jobs, newest first')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(limitOption())
    .action(async (opts: { queue?: string; limit: number }, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.dlq.list({ queueName: opts.queue, limit: opts.limit });
      ctx.print(rows, () => table(rows, JOB_COLUMNS, 'The dead-letter queue is empty.'));
    });

  dlq
    .command('retry [ids...]')
    .description('move dead-lettered jobs back to pending: the given ids, else the oldest of --queue, else the oldest overall')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(new Option('--limit <n>', 'at most this many (1-100)').argParser(intIn(1, 100)))
    .action(async (ids: string[], opts: { queue?: string; limit?: number }, command: Command) => {
      const ctx = contextFor(command);
      const answer = await ctx.client.dlq.retry({ jobIds: ids.length > 0 ? ids : undefined, queueName: opts.queue, limit: opts.limit });
      ctx.print(answer, () => `Retried ${answer.retriedCount} job(s)${answer.retriedJobs.length ? `:\n${answer.retriedJobs.join('\n')}` : '.'}`);
    });

  dlq
    .command('purge')
    .description('delete dead-lettered jobs for good')
    .option('-q, --queue <name>', 'only this queue')
    .option('--older-than <time>', 'only jobs created before this ISO time')
    .addOption(new Option('--limit <n>', 'at most this many (1-10000)').argParser(intIn(1, 10_000)))
    .option('-y, --yes', 'confirm the deletion')
    .action(async (opts: { queue?: string; olderThan?: string; limit?: number; yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new UsageError('purge deletes jobs for good: add --yes to confirm');
      if (opts.olderThan !== undefined && Number.isNaN(Date.parse(opts.olderThan))) throw new UsageError(`--older-than is not a date: "${opts.olderThan}"`);
      const ctx = contextFor(command);
      const answer = await ctx.client.dlq.purge({ queueName: opts.queue, olderThan: opts.olderThan, limit: opts.limit, confirm: true });
      ctx.print(answer, () => `Purged ${answer.purgedCount} job(s).`);
    });

  return dlq;
}
