/** `spool dlq replay …` and `spool dlq replays list|show|cancel`: paced DLQ replays (docs/jobs-api.md, "Paced DLQ replays"). */
import { Command, Option } from 'commander';
import type { CreateDlqReplayParams, DlqReplay, DlqReplayStatus } from '@spool/sdk';
import { CommandFailed, contextFor, intIn, UsageError, type Context } from '../context.js';
import { details, shortTime, table, type Column } from '../output.js';

const STATUSES: DlqReplayStatus[] = ['running', 'completed', 'cancelled', 'failed'];

const REPLAY_COLUMNS: Column<DlqReplay>[] = [
  { header: 'ID', value: (r) => r.id },
  { header: 'STATUS', value: (r) => r.status },
  { header: 'QUEUE', value: (r) => r.queueName ?? (r.jobIdsCount !== null ? `${r.jobIdsCount} ids` : 'any') },
  { header: 'DONE', value: (r) => `${r.done}/${r.total}`, right: true },
  { header: 'SKIPPED', value: (r) => r.skipped, right: true },
  { header: '%', value: (r) => Math.floor(r.progress), right: true },
  { header: 'PACE', value: (r) => (r.perSecond === null ? 'max' : `${r.perSecond}/s`), right: true },
  { header: 'CREATED', value: (r) => shortTime(r.createdAt) },
  { header: 'BY', value: (r) => r.createdBy },
];

const n = (value: number) => value.toLocaleString('en-US');

function eta(seconds: number | null): string {
  if (seconds === null) return '';
  if (seconds < 60) return `  eta ${Math.ceil(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `  eta ${minutes}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s` : `  eta ${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

/** One line of progress: the bar for a terminal, plain text for a log. */
export function replayLine(replay: DlqReplay, bar: boolean): string {
  const handled = replay.done + replay.skipped;
  const rate = replay.rate === null ? '' : `  ${n(Math.round(replay.rate))}/s`;
  const skipped = replay.skipped > 0 ? `, ${n(replay.skipped)} skipped` : '';
  if (!bar) return `replay ${replay.id} ${replay.status}: ${n(replay.done)}/${n(replay.total)} replayed${skipped} (${Math.floor(replay.progress)}%)${rate}${eta(replay.etaSeconds)}`;
  const width = 30;
  const filled = replay.total === 0 ? width : Math.round((handled / replay.total) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor(replay.progress)}%  ${n(replay.done)}/${n(replay.total)}${skipped}${rate}${eta(replay.etaSeconds)}`;
}

function summary(replay: DlqReplay): string {
  const skipped = replay.skipped > 0 ? `, ${replay.skipped} skipped (no longer dead-lettered)` : '';
  switch (replay.status) {
    case 'running':
      return `Replay ${replay.id} started: ${replay.total} job(s)${replay.perSecond === null ? '' : ` at ${replay.perSecond}/s`}. Follow it with \`spool dlq replays show ${replay.id}\`; stop it with \`spool dlq replays cancel ${replay.id}\`.`;
    case 'completed':
      return replay.total === 0 ? `Nothing to replay: no dead-lettered job matched (replay ${replay.id}).` : `Replay ${replay.id} completed: ${replay.done} job(s) replayed${skipped}.`;
    case 'cancelled':
      return `Replay ${replay.id} cancelled${replay.cancelledBy ? ` by ${replay.cancelledBy}` : ''}: ${replay.done} of ${replay.total} job(s) replayed${skipped}, ${replay.remaining} left in the DLQ.`;
    case 'failed':
      return `Replay ${replay.id} failed: ${replay.error ?? 'unknown error'}; ${replay.done} of ${replay.total} job(s) replayed, ${replay.remaining} left in the DLQ.`;
  }
}

/**
 * Follows a replay to its end on stderr: a bar redrawn in place on a
 * terminal (or with --progress), else a line per second that something
 * moved. Returns the finished replay; exit 1 unless it completed.
 */
async function follow(ctx: Context, replay: DlqReplay, intervalMs: number): Promise<DlqReplay> {
  const bar = ctx.options.progress === true || Boolean(process.stderr.isTTY);
  let lastLine = 0;
  let lastDone = -1;
  const finished = await ctx.client.dlq.replays.waitFor(replay.id, {
    intervalMs,
    onProgress: (r) => {
      const now = Date.now();
      const end = r.status !== 'running';
      if (bar) {
        process.stderr.write(`\r\x1b[2K${replayLine(r, true)}${end ? '\n' : ''}`);
      } else if (end || (r.done + r.skipped !== lastDone && now - lastLine >= 1000)) {
        process.stderr.write(`${replayLine(r, false)}\n`);
        lastLine = now;
        lastDone = r.done + r.skipped;
      }
    },
  });
  return finished;
}

function finish(ctx: Context, replay: DlqReplay): void {
  if (replay.status === 'failed' || replay.status === 'cancelled') {
    ctx.print(replay, () => summary(replay));
    throw new CommandFailed(replay.status === 'failed' ? 'REPLAY_FAILED' : 'REPLAY_CANCELLED', summary(replay), { replay_id: replay.id, status: replay.status });
  }
  ctx.print(replay, () => summary(replay));
}

function date(name: string): (value: string) => string {
  return (value) => {
    if (Number.isNaN(Date.parse(value))) throw new UsageError(`${name} is not a date: "${value}"`);
    return value;
  };
}

interface ReplayOptions {
  queue?: string;
  perSecond?: number;
  limit?: number;
  errorContains?: string;
  createdAfter?: string;
  createdBefore?: string;
  priority?: number;
  maxRetries?: number;
  moveTo?: string;
  wait?: boolean;
  interval: number;
}

/** `spool dlq replay`. */
export function replayCommand(): Command {
  return new Command('replay')
    .description('replay dead-lettered jobs in the background at a pace (any number, unlike `dlq retry`): the given ids, else those of --queue, else all; --wait follows it with a progress bar')
    .argument('[ids...]', 'only these jobs')
    .option('-q, --queue <name>', 'only this queue')
    .addOption(new Option('--per-second <n>', 'jobs per second at most, across every server (default: as fast as batches go)').argParser(intIn(1, 10_000)))
    .addOption(new Option('--limit <n>', 'at most this many, oldest first (default and most: 100000)').argParser(intIn(1, 100_000)))
    .option('--error-contains <text>', 'only jobs whose last error contains this text (case-insensitive)')
    .option('--created-after <time>', 'only jobs created at or after this ISO time')
    .option('--created-before <time>', 'only jobs created before this ISO time')
    .addOption(new Option('--priority <n>', 'give each replayed job this priority').argParser(intIn(-100, 100)))
    .addOption(new Option('--max-retries <n>', 'give each replayed job this retry budget').argParser(intIn(0, 100)))
    .option('--move-to <queue>', 'move each replayed job to this queue')
    .option('-w, --wait', 'wait until the replay ends, showing its progress on stderr (Ctrl-C stops waiting; the replay goes on)')
    .addOption(new Option('--interval <ms>', 'with --wait: how often to read the progress').argParser(intIn(50, 60_000)).default(500).hideHelp())
    .action(async (ids: string[], opts: ReplayOptions, command: Command) => {
      if (opts.createdAfter !== undefined) date('--created-after')(opts.createdAfter);
      if (opts.createdBefore !== undefined) date('--created-before')(opts.createdBefore);
      if (ids.length > 10_000) throw new UsageError('at most 10000 ids per replay: give --queue or filters instead');
      const ctx = contextFor(command);
      const edits = { priority: opts.priority, maxRetries: opts.maxRetries, queueName: opts.moveTo };
      const params: CreateDlqReplayParams = {
        queueName: opts.queue,
        jobIds: ids.length > 0 ? ids : undefined,
        perSecond: opts.perSecond,
        limit: opts.limit,
        errorContains: opts.errorContains,
        createdAfter: opts.createdAfter,
        createdBefore: opts.createdBefore,
        edits: Object.values(edits).some((v) => v !== undefined) ? edits : undefined,
      };
      let replay = await ctx.client.dlq.replays.create(params);
      if (opts.wait && replay.status === 'running') replay = await follow(ctx, replay, opts.interval);
      finish(ctx, replay);
    });
}

/** `spool dlq replays list|show|cancel`. */
export function replaysCommand(): Command {
  const replays = new Command('replays').description('list, follow and cancel paced DLQ replays');

  replays
    .command('list')
    .description('replays, newest first')
    .addOption(new Option('-s, --status <status>', 'only this status').choices(STATUSES))
    .addOption(new Option('--limit <n>', 'rows to show (1-100)').argParser(intIn(1, 100)).default(50))
    .action(async (opts: { status?: DlqReplayStatus; limit: number }, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.dlq.replays.list({ status: opts.status, limit: opts.limit });
      ctx.print(rows, () => table(rows, REPLAY_COLUMNS, 'No replays.'));
    });

  replays
    .command('show <id>')
    .description('one replay and its progress; --wait follows it to the end')
    .option('-w, --wait', 'wait until the replay ends, showing its progress on stderr')
    .addOption(new Option('--interval <ms>', 'with --wait: how often to read the progress').argParser(intIn(50, 60_000)).default(500).hideHelp())
    .action(async (id: string, opts: { wait?: boolean; interval: number }, command: Command) => {
      const ctx = contextFor(command);
      let replay = await ctx.client.dlq.replays.get(id);
      if (opts.wait && replay.status === 'running') {
        replay = await follow(ctx, replay, opts.interval);
        finish(ctx, replay);
        return;
      }
      ctx.print(replay, () => `${details(replay)}\n\n${replayLine(replay, false)}`);
    });

  replays
    .command('cancel <id>')
    .description('stop a running replay between two batches (jobs already replayed stay replayed)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const replay = await ctx.client.dlq.replays.cancel(id);
      ctx.print(replay, () => summary(replay));
    });

  return replays;
}
