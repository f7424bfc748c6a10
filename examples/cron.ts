/**
 * Cron schedules: six fields (with seconds) and time zones.
 *
 *   SPOOL_API_KEY=sk_test_... npx tsx examples/cron.ts
 *
 * A schedule enqueues a job with its payload template each time its cron
 * expression fires. Expressions have six fields:
 *
 *   second minute hour day-of-month month day-of-week
 *
 * and are read in the schedule's IANA time zone (default UTC), daylight
 * saving included. This example creates a weekday 09:30 New York schedule
 * and shows when it runs next, then a schedule that fires every two seconds
 * and processes two of its jobs with a worker. It deletes both at the end.
 */
import { Worker, type SpoolClient } from '@spool/sdk';
import { check, clock, runExample, runId } from './support.js';

const QUEUE = 'example-reports';
const PREFIX = 'example-cron-';

/** Hour, minute and weekday of an instant in a time zone. */
function localTime(at: string, timeZone: string): { text: string; hhmm: string; weekday: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' })
      .formatToParts(new Date(at))
      .map((part) => [part.type, part.value]),
  );
  return {
    text: `${parts.weekday} ${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`,
    hhmm: `${parts.hour}:${parts.minute}`,
    weekday: parts.weekday!,
  };
}

/** Schedules left by an earlier run that was killed before it could clean up. */
async function deleteLeftovers(spool: SpoolClient): Promise<void> {
  for (const schedule of await spool.schedules.list({ limit: 100 })) {
    if (schedule.name.startsWith(PREFIX)) await spool.schedules.delete(schedule.id);
  }
}

await runExample('cron schedules', async (spool) => {
  await deleteLeftovers(spool);
  const created: string[] = [];
  try {
    // 1. Weekdays at 09:30 in New York: the same local time in winter (EST) and summer (EDT).
    const standup = await spool.schedules.create({
      name: `${PREFIX}standup-${runId}`,
      cronExpression: '0 30 9 * * 1-5',
      timezone: 'America/New_York',
      queueName: QUEUE,
      payloadTemplate: { kind: 'standup-reminder' },
    });
    created.push(standup.id);
    const next = localTime(standup.nextRunAt!, 'America/New_York');
    console.log(`schedule "${standup.cronExpression}" in America/New_York: next run ${standup.nextRunAt} (UTC) = ${next.text}`);
    check(next.hhmm === '09:30' && !['Sat', 'Sun'].includes(next.weekday), `the next run should be a weekday at 09:30 New York time, is ${next.text}`);

    // 2. Every two seconds (the first field is seconds): fires while we watch.
    const pulse = await spool.schedules.create({
      name: `${PREFIX}pulse-${runId}`,
      cronExpression: '*/2 * * * * *',
      timezone: 'Europe/Berlin',
      queueName: QUEUE,
      payloadTemplate: { kind: 'pulse', run: runId },
    });
    created.push(pulse.id);
    console.log(`schedule "${pulse.cronExpression}" in Europe/Berlin: next run ${localTime(pulse.nextRunAt!, 'Europe/Berlin').text}`);

    const worker = new Worker<{ kind: string; run?: string }>(spool, { queue: QUEUE, concurrency: 1 });
    const fired: Date[] = [];
    const twoRuns = new Promise<void>((resolve) => {
      worker.handle(async (job) => {
        if (job.payload.run !== runId) return { skipped: 'not from this run' };
        const enqueuedAt = new Date((job.createdAt as string | undefined) ?? Date.now());
        fired.push(enqueuedAt);
        console.log(`${clock()} job ${job.id} from the schedule, enqueued at ${clock(enqueuedAt)}`);
        if (fired.length === 2) resolve();
        return { handled: true };
      });
    });
    await worker.start();
    await twoRuns;
    await worker.stop();

    await spool.schedules.pause(pulse.id);
    const history = await spool.schedules.history(pulse.id);
    const after = await spool.schedules.get(pulse.id);
    console.log(`paused; the schedule ran ${after.runCount} time(s), ${history.length} run(s) in its history`);
    check(after.runCount >= 2 && !after.isActive, 'the schedule should have run at least twice and be paused');
    // Each job was enqueued at its tick: on an even second, milliseconds after it.
    const lateness = fired.map((at) => at.getTime() % 2_000);
    console.log(`jobs enqueued ${lateness.map((ms) => `${ms} ms`).join(', ')} after their ticks`);
    check(lateness.every((ms) => ms < 1_000), 'each job should be enqueued within a second of its two-second tick');
  } finally {
    for (const id of created) await spool.schedules.delete(id);
    console.log(`deleted ${created.length} schedule(s)`);
  }
});
