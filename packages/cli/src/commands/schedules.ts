/** `spool schedules …`. */
import { Command, Option } from 'commander';
import type { Schedule } from '@spool/sdk';
import { CommandFailed, contextFor, intIn, parseJson, UsageError, type Context } from '../context.js';
import { shortTime, table } from '../output.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The id of the schedule `idOrName` names: a UUID as given, else the one schedule with exactly that name. */
async function scheduleId(ctx: Context, idOrName: string): Promise<string> {
  if (UUID.test(idOrName)) return idOrName;
  const matches: Schedule[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await ctx.client.schedules.list({ limit: 500, offset });
    matches.push(...page.filter((s) => s.name === idOrName));
    if (page.length < 500) break;
  }
  if (matches.length === 1) return matches[0]!.id;
  if (matches.length === 0) {
    throw new CommandFailed('SCHEDULE_NOT_FOUND', `no schedule has the id or name "${idOrName}"; \`spool schedules list\` shows them`, { schedule: idOrName });
  }
  throw new CommandFailed(
    'AMBIGUOUS_SCHEDULE',
    `${matches.length} schedules are named "${idOrName}" (${matches.map((s) => `${s.id} on ${s.queueName}`).join(', ')}): give the id instead`,
    { schedule: idOrName, ids: matches.map((s) => s.id) },
  );
}

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
      .command(`${verb} <id-or-name>`)
      .description(text)
      .action(async (idOrName: string, _opts: unknown, command: Command) => {
        const ctx = contextFor(command);
        const schedule = await ctx.client.schedules[verb](await scheduleId(ctx, idOrName));
        ctx.print(schedule, () => `Schedule ${schedule.id} is ${schedule.isActive ? 'active' : 'paused'}${schedule.isActive && schedule.nextRunAt ? `; next run ${shortTime(schedule.nextRunAt)}` : ''}.`);
      });
  }

  schedules
    .command('trigger <id-or-name>')
    .description('enqueue one job from the schedule now (also while paused)')
    .action(async (idOrName: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const id = await scheduleId(ctx, idOrName);
      const answer = await ctx.client.schedules.trigger(id);
      ctx.print(answer, () => `Triggered schedule ${id}: job ${answer.jobId}.`);
    });

  schedules
    .command('delete <id-or-name>')
    .description('delete the schedule for good (jobs it already enqueued stay)')
    .option('-y, --yes', 'confirm the deletion')
    .action(async (idOrName: string, opts: { yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new UsageError('delete removes the schedule for good: add --yes to confirm');
      const ctx = contextFor(command);
      const id = await scheduleId(ctx, idOrName);
      await ctx.client.schedules.delete(id);
      ctx.print({ id, deleted: true }, () => `Deleted schedule ${id}.`);
    });

  return schedules;
}
