/** `spool schedules …`. */
import { Command, Option } from 'commander';
import type { Schedule } from '@spool/sdk';
import { contextFor, intIn, parseJson } from '../context.js';
import { shortTime, table } from '../output.js';

export function schedulesCommand(): Command {
  const schedules = new Command('schedules').description('cron schedules that enqueue jobs');

  schedules
    .command('list')
    .description('all schedules, newest first')
    .action(async (_opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.schedules.list();
      ctx.print(rows, () =>
        table<Schedule>(
          rows,
          [
            { header: 'ID', value: (s) => s.id },
            { header: 'NAME', value: (s) => s.name },
            { header: 'CRON', value: (s) => s.cronExpression },
            { header: 'TZ', value: (s) => s.timezone },
            { header: 'QUEUE', value: (s) => s.queueName },
            { header: 'STATE', value: (s) => (s.isActive ? 'active' : 'paused') },
            { header: 'RUNS', value: (s) => s.runCount, right: true },
            { header: 'NEXT RUN', value: (s) => shortTime(s.nextRunAt) },
          ],
          'No schedules.',
        ),
      );
    });

  schedules
    .command('create <name>')
    .description('create a schedule; cron has 6 fields: sec min hour day-of-month month day-of-week')
    .requiredOption('-c, --cron <expression>', 'e.g. "0 */5 * * * *" (every five minutes)')
    .requiredOption('-q, --queue <name>', 'queue the jobs go to')
    .option('-p, --payload <json>', 'payload of every job', '{}')
    .option('--timezone <iana>', 'time zone of the cron expression', 'UTC')
    .option('--description <text>', 'what it is for')
    .addOption(new Option('--priority <n>', 'job priority (-100..100)').argParser(intIn(-100, 100)))
    .addOption(new Option('--max-retries <n>', 'retries per job (0..100)').argParser(intIn(0, 100)))
    .action(
      async (
        name: string,
        opts: { cron: string; queue: string; payload: string; timezone: string; description?: string; priority?: number; maxRetries?: number },
        command: Command,
      ) => {
        const payloadTemplate = parseJson(opts.payload, '--payload');
        const ctx = contextFor(command);
        const created = await ctx.client.schedules.create({
          name,
          cronExpression: opts.cron,
          queueName: opts.queue,
          payloadTemplate,
          timezone: opts.timezone,
          description: opts.description,
          priority: opts.priority,
          maxRetries: opts.maxRetries,
        });
        ctx.print(created, () => `Created schedule ${created.id} (${created.name}); next run ${shortTime(created.nextRunAt)}.`);
      },
    );

  for (const [verb, text] of [
    ['pause', 'stop firing the schedule'],
    ['resume', 'fire the schedule again'],
  ] as const) {
    schedules
      .command(`${verb} <id>`)
      .description(text)
      .action(async (id: string, _opts: unknown, command: Command) => {
        const ctx = contextFor(command);
        const schedule = await ctx.client.schedules[verb](id);
        ctx.print(schedule, () => `Schedule ${schedule.id} is ${schedule.isActive ? 'active' : 'paused'}${schedule.isActive && schedule.nextRunAt ? `; next run ${shortTime(schedule.nextRunAt)}` : ''}.`);
      });
  }

  schedules
    .command('trigger <id>')
    .description('enqueue one job from the schedule now (also while paused)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const answer = await ctx.client.schedules.trigger(id);
      ctx.print(answer, () => `Triggered schedule ${id}: job ${answer.jobId}.`);
    });

  return schedules;
}
