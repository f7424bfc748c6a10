/** `spool queues …`, `spool workers list` and `spool stats`. */
import { Command } from 'commander';
import { NotFoundError, type WorkerSummary } from '@spool/sdk';
import { CommandFailed, contextFor, type Context } from '../context.js';
import { shortTime, table } from '../output.js';

export function queuesCommand(): Command {
  const queues = new Command('queues').description('list, pause and resume queues');

  queues
    .command('list')
    .description('configured queues, with live counts from the dashboard')
    .action(async (_opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const [configs, dashboard] = await Promise.all([ctx.client.queues.list(), ctx.client.dashboard.get().catch(() => null)]);
      const live = new Map((dashboard?.queues ?? []).map((q) => [q.name, q]));
      const names = [...new Set([...configs.map((c) => c.queueName), ...live.keys()])].sort();
      const rows = names.map((name) => {
        const config = configs.find((c) => c.queueName === name);
        const counts = live.get(name);
        return {
          queueName: name,
          paused: config ? !config.enabled : (counts?.paused ?? false),
          pending: counts?.pending ?? null,
          processing: counts?.processing ?? null,
          maxRetries: config?.maxRetries ?? null,
          defaultTimeout: config?.defaultTimeout ?? null,
          rateLimit: config?.rateLimit ?? null,
        };
      });
      ctx.print(rows, () =>
        table(
          rows,
          [
            { header: 'QUEUE', value: (r) => r.queueName },
            { header: 'STATE', value: (r) => (r.paused ? 'paused' : 'active') },
            { header: 'PENDING', value: (r) => r.pending, right: true },
            { header: 'PROCESSING', value: (r) => r.processing, right: true },
            { header: 'MAX RETRIES', value: (r) => r.maxRetries, right: true },
            { header: 'TIMEOUT S', value: (r) => r.defaultTimeout, right: true },
            { header: 'RATE LIMIT', value: (r) => r.rateLimit, right: true },
          ],
          'No queues yet: enqueue a job to create one.',
        ),
      );
    });

  queues
    .command('pause <name>')
    .description('stop workers from claiming jobs of the queue (enqueueing still works)')
    .option('-r, --reason <text>', 'why, shown to others')
    .option('--create', 'pause it even if the queue has no jobs and no configuration yet (pausing creates its configuration)')
    .action(async (name: string, opts: { reason?: string; create?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      if (!opts.create && !(await queueExists(ctx, name))) {
        throw new CommandFailed(
          'QUEUE_NOT_FOUND',
          `queue "${name}" has no jobs and no configuration, so pausing it would create a new queue; check the name (\`spool queues list\`) or add --create to pause it before its first job`,
          { queue_name: name },
        );
      }
      const answer = await ctx.client.queues.pause(name, opts.reason);
      ctx.print(answer, () => `Paused queue ${answer.queueName}${answer.reason ? ` (${answer.reason})` : ''}.`);
    });

  queues
    .command('resume <name>')
    .description('let workers claim from the queue again')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const answer = await ctx.client.queues.resume(name);
      ctx.print(answer, () => `Resumed queue ${answer.queueName} (paused for ${answer.pausedDurationSecs} s).`);
    });

  return queues;
}

/** A queue exists for the CLI when it has a configuration or any job: pausing a typo would otherwise make a new one. */
async function queueExists(ctx: Context, name: string): Promise<boolean> {
  try {
    await ctx.client.queues.get(name);
    return true;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  return (await ctx.client.jobs.list({ queueName: name, limit: 1 })).length > 0;
}

export function workersCommand(): Command {
  const workers = new Command('workers').description('see the workers connected to Spool');
  workers
    .command('list')
    .description('registered workers, most recent heartbeat first')
    .action(async (_opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.workers.list();
      ctx.print(rows, () =>
        table<WorkerSummary>(
          rows,
          [
            { header: 'ID', value: (w) => w.id },
            { header: 'QUEUE', value: (w) => w.queueName },
            { header: 'HOST', value: (w) => w.hostname },
            { header: 'STATUS', value: (w) => w.status },
            { header: 'JOBS', value: (w) => `${w.currentJobs}/${w.maxConcurrency}`, right: true },
            { header: 'LAST HEARTBEAT', value: (w) => shortTime(w.lastHeartbeat) },
          ],
          'No workers.',
        ),
      );
    });
  return workers;
}

export function statsCommand(): Command {
  return new Command('stats').description('job counts and activity across the organization').action(async (_opts: unknown, command: Command) => {
    const ctx = contextFor(command);
    const [jobs, dashboard] = await Promise.all([ctx.client.jobs.stats(), ctx.client.dashboard.get()]);
    ctx.print({ jobs, dashboard }, () => {
      const counts = table(
        Object.entries(jobs).map(([status, count]) => ({ status, count })),
        [
          { header: 'STATUS', value: (r) => r.status },
          { header: 'JOBS', value: (r) => r.count, right: true },
        ],
      );
      const activity = dashboard.recentActivity;
      return [
        `Spool ${dashboard.system.version} at ${ctx.client.baseUrl}, up ${dashboard.system.uptimeSeconds} s`,
        '',
        counts,
        '',
        `Last hour: ${activity.jobsCreated1h} created, ${activity.jobsCompleted1h} completed, ${activity.jobsFailed1h} failed`,
        `Workers: ${dashboard.workers.healthy} healthy of ${dashboard.workers.total}`,
      ].join('\n');
    });
  });
}
