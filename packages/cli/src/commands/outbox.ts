/**
 * `spool outbox init | relay | status`: the transactional outbox in the
 * application's own database (docs/transactional-enqueue.md). The relay
 * forwards committed `spool_outbox` rows to the Spool server of --url.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import pg from 'pg';
import { ensureOutboxTable, OUTBOX_SCHEMA_SQL, OutboxRelay, toWire, type OutboxDrainResult, type OutboxRelayEvent, type OutboxStatus } from '@spool/sdk';
import { CommandFailed, contextFor, explain, intIn, UsageError, type Context } from '../context.js';
import { shortTime, table } from '../output.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `30s`, `15m`, `1h`, `7d` (or `0`) → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (text.trim() === '0') return 0;
  if (!match) throw new InvalidArgumentError('Expected a duration such as 30s, 15m, 1h or 7d.');
  return Math.round(Number(match[1]) * UNITS[match[2]!]!);
}

function logInterval(text: string): number {
  const ms = parseDuration(text);
  if (ms < 100) throw new InvalidArgumentError('Expected at least 100ms.');
  return ms;
}

function keepDuration(text: string): number | null {
  return text === 'forever' ? null : parseDuration(text);
}

/** 3600000 → `1h`, 1500 → `1.5 s`. */
function showDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

const count = (n: number) => n.toLocaleString('en-US');
const rows = (n: number) => `${count(n)} ${n === 1 ? 'row' : 'rows'}`;

/** The URL with its password hidden, for messages and logs. */
export function maskDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

function checkDatabaseUrl(url: string | undefined): string {
  if (!url) throw new UsageError('--database-url (or SPOOL_OUTBOX_DATABASE_URL) is required: the PostgreSQL of your application, where spool_outbox lives');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--database-url is not a URL: "${maskDatabaseUrl(url)}" (expected postgres://user:password@host:5432/database)`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') throw new UsageError(`--database-url must be a postgres:// URL, got "${maskDatabaseUrl(url)}"`);
  return url;
}

function errorCode(err: unknown): string | undefined {
  const own = (err as { code?: unknown } | null)?.code;
  if (typeof own === 'string') return own;
  const inner = (err as { errors?: unknown[] } | null)?.errors?.[0];
  const code = (inner as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A database failure as one message naming the (masked) URL, and what to do. */
export function describeDatabaseError(err: unknown, url: string): { message: string; hint?: string } {
  const where = maskDatabaseUrl(url);
  const text = err instanceof Error ? err.message : String(err);
  switch (errorCode(err)) {
    case 'ECONNREFUSED':
      return { message: `cannot connect to the application database at ${where} (connection refused)`, hint: 'Is PostgreSQL running there? Check --database-url / SPOOL_OUTBOX_DATABASE_URL.' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { message: `cannot resolve the host of the application database ${where}`, hint: 'Check --database-url / SPOOL_OUTBOX_DATABASE_URL.' };
    case 'ETIMEDOUT':
      return { message: `timed out connecting to the application database at ${where}` };
    case '28P01':
    case '28000':
      return { message: `the application database at ${where} refused the login: ${text}`, hint: 'Check the user and password in --database-url.' };
    case '3D000':
      return { message: `${text} (application database ${where})`, hint: 'Check the database name in --database-url.' };
    case '42P01':
      return {
        message: `no outbox in the application database ${where}: ${text}`,
        hint: 'Create it with `spool outbox init --database-url …` (or ensureOutboxTable() from @spool/sdk, or the DDL in docs/transactional-enqueue.md).',
      };
    default:
      return { message: `${text} (application database ${where})` };
  }
}

function databaseFailure(err: unknown, url: string): CommandFailed {
  const { message, hint } = describeDatabaseError(err, url);
  return new CommandFailed('DATABASE_ERROR', message, { cause: errorCode(err) ?? null }, hint);
}

function openPool(url: string, onIdleError: (err: Error) => void): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4, application_name: 'spool-outbox-relay', connectionTimeoutMillis: 10_000 });
  // An idle connection that breaks (a restarted server) must not crash the relay: the next batch reconnects.
  pool.on('error', onIdleError);
  return pool;
}

function databaseUrlOption(): Option {
  return new Option('--database-url <url>', 'the application\'s PostgreSQL, where spool_outbox lives').env('SPOOL_OUTBOX_DATABASE_URL');
}

interface RelayOptions {
  databaseUrl?: string;
  batchSize: number;
  pollMs: number;
  once?: boolean;
  keepForwarded: number | null;
  inFlight: number;
  rowsPerKey: number;
  logInterval: number;
}

interface Tally {
  forwarded: number;
  created: number;
  existing: number;
  failed: number;
  pruned: number;
}

const emptyTally = (): Tally => ({ forwarded: 0, created: 0, existing: 0, failed: 0, pruned: 0 });

/** The relay's log: human lines on stderr, or with --json one JSON object per line on stdout. */
class RelayLog {
  readonly #ctx: Context;
  readonly #url: string;
  readonly total = emptyTally();
  #interval = emptyTally();
  #intervalStarted = Date.now();

  constructor(ctx: Context, url: string) {
    this.#ctx = ctx;
    this.#url = url;
  }

  #emit(event: string, fields: Record<string, unknown>, human: string): void {
    if (this.#ctx.options.json) process.stdout.write(`${JSON.stringify(toWire({ event, at: new Date().toISOString(), ...fields }))}\n`);
    else process.stderr.write(`${new Date().toISOString()} ${human}\n`);
  }

  started(outboxId: string, opts: RelayOptions): void {
    const keep = opts.keepForwarded === null ? 'keeping forwarded rows' : `deleting rows forwarded over ${showDuration(opts.keepForwarded)} ago`;
    this.#emit(
      'started',
      { outboxId, databaseUrl: maskDatabaseUrl(this.#url), spoolUrl: this.#ctx.options.url, batchSize: opts.batchSize, pollMs: opts.pollMs, keepForwardedMs: opts.keepForwarded, once: Boolean(opts.once) },
      `outbox relay: forwarding spool_outbox of ${maskDatabaseUrl(this.#url)} (outbox ${outboxId}) to ${this.#ctx.options.url}${opts.once ? ' until nothing is due' : ''}; batches of ${opts.batchSize}, polling every ${opts.pollMs} ms, ${keep}`,
    );
  }

  event(event: OutboxRelayEvent): void {
    switch (event.type) {
      case 'batch':
        for (const tally of [this.total, this.#interval]) {
          tally.forwarded += event.result.forwarded;
          tally.created += event.result.created;
          tally.existing += event.result.existing;
          tally.failed += event.result.failed;
        }
        return;
      case 'pruned':
        this.total.pruned += event.deleted;
        this.#interval.pruned += event.deleted;
        return;
      case 'row_failed': {
        const key = event.orderingKey === null ? '' : `, key ${event.orderingKey}`;
        const waits = event.orderingKey === null ? '' : `; later rows of key ${event.orderingKey} wait for it`;
        this.#emit(
          'row_failed',
          { id: event.id, queueName: event.queueName, orderingKey: event.orderingKey, attempts: event.attempts, error: event.error, retryInMs: event.retryInMs },
          `row ${event.id} (queue ${event.queueName}${key}) refused by Spool, attempt ${event.attempts}: ${event.error}; retrying in ${showDuration(event.retryInMs)}${waits}`,
        );
        return;
      }
      case 'unavailable': {
        const explained = event.source === 'spool' ? explain(event.error, this.#ctx.options) : describeDatabaseError(event.error, this.#url);
        this.#emit(
          'unavailable',
          { source: event.source, message: explained.message, hint: explained.hint ?? null, retryInMs: event.retryInMs },
          `${explained.message}; retrying in ${showDuration(event.retryInMs)}${explained.hint ? ` (${explained.hint})` : ''}`,
        );
        return;
      }
    }
  }

  /** Rows forwarded since the last line, and how far behind the relay is; nothing when idle and caught up. */
  progress(status: OutboxStatus | null, force = false): void {
    const tally = this.#interval;
    const seconds = (Date.now() - this.#intervalStarted) / 1000;
    this.#interval = emptyTally();
    this.#intervalStarted = Date.now();
    const busy = tally.forwarded + tally.failed + tally.pruned > 0 || (status?.waiting ?? 0) > 0;
    if (!busy && !force) return;
    const waiting = status
      ? `; ${count(status.waiting)} waiting${status.waiting > 0 ? `, the oldest written ${showDuration(status.lagMs)} ago` : ''}${status.failing > 0 ? `, ${count(status.failing)} of them failed last time` : ''}`
      : '';
    const pruned = tally.pruned > 0 ? `; old forwarded rows deleted: ${count(tally.pruned)}` : '';
    this.#emit(
      'progress',
      { intervalMs: Math.round(seconds * 1000), ...tally, waiting: status?.waiting ?? null, failing: status?.failing ?? null, lagMs: status?.lagMs ?? null },
      `forwarded ${rows(tally.forwarded)} in ${seconds.toFixed(1)} s (${count(tally.created)} new jobs, ${count(tally.existing)} already in Spool), ${count(tally.failed)} refused${waiting}${pruned}`,
    );
  }

  finished(event: 'stopped' | 'drained', status: OutboxStatus | null, drained?: OutboxDrainResult): void {
    const t = this.total;
    const left = status ? `; ${count(status.waiting)} waiting${status.failing > 0 ? `, ${count(status.failing)} of them failed last time (see \`spool outbox status\`)` : ''}` : '';
    this.#emit(
      event,
      { ...t, batches: drained?.batches ?? null, waiting: status?.waiting ?? null, failing: status?.failing ?? null, lagMs: status?.lagMs ?? null },
      `${event === 'stopped' ? 'stopped' : 'done'}: forwarded ${rows(t.forwarded)} (${count(t.created)} new jobs, ${count(t.existing)} already in Spool), ${count(t.failed)} refused, ${count(t.pruned)} old rows deleted${left}`,
    );
  }
}

async function relay(ctx: Context, opts: RelayOptions): Promise<void> {
  const url = checkDatabaseUrl(opts.databaseUrl);
  const log = new RelayLog(ctx, url);
  const pool = openPool(url, () => {});
  const relay = new OutboxRelay({
    pool,
    spool: ctx.client,
    batchSize: opts.batchSize,
    pollMs: opts.pollMs,
    keepForwardedMs: opts.keepForwarded,
    concurrency: opts.inFlight,
    rowsPerKey: opts.rowsPerKey,
    onEvent: (event) => log.event(event),
  });
  try {
    let outboxId: string;
    try {
      outboxId = await relay.outboxId();
    } catch (err) {
      throw databaseFailure(err, url);
    }
    log.started(outboxId, opts);

    if (opts.once) {
      let drained: OutboxDrainResult;
      try {
        drained = await relay.drain();
      } catch (err) {
        throw databaseFailure(err, url);
      }
      log.finished('drained', drained.status, drained);
      // Spool could not take the rows: the command failed, with the reason (and hint) as for any command.
      if (drained.unavailable !== undefined) throw drained.unavailable;
      if (drained.status.failing > 0) process.exitCode = 1;
      return;
    }

    const status = () => relay.status().catch(() => null);
    relay.start();
    const ticker = setInterval(() => void status().then((s) => log.progress(s)), opts.logInterval);
    await new Promise<void>((resolve) => {
      const onSignal = (signal: NodeJS.Signals) => {
        // A second signal does not wait for the batch in flight: its rows are sent again by the next relay.
        process.once(signal, () => process.exit(signal === 'SIGINT' ? 130 : 143));
        resolve();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    });
    clearInterval(ticker);
    await relay.stop();
    const last = await status();
    log.progress(last);
    log.finished('stopped', last);
  } finally {
    await pool.end().catch(() => {});
  }
}

async function status(ctx: Context, databaseUrl: string | undefined, limit: number): Promise<void> {
  const url = checkDatabaseUrl(databaseUrl);
  const pool = openPool(url, () => {});
  try {
    const relay = new OutboxRelay({ pool, spool: ctx.client });
    let outboxId: string;
    try {
      outboxId = await relay.outboxId();
      const [now, failing] = await Promise.all([relay.status(), relay.failing(limit)]);
      const report = { outboxId, ...now, failingRows: failing };
      ctx.print(report, () => {
        const head = `Outbox ${outboxId} in ${maskDatabaseUrl(url)}: ${rows(now.waiting)} waiting${now.waiting > 0 ? `, the oldest written ${showDuration(now.lagMs)} ago` : ''}, ${count(now.failing)} failed last time.`;
        if (failing.length === 0) return head;
        return `${head}\n\n${table(failing, [
          { header: 'ROW', value: (r) => r.id, right: true },
          { header: 'QUEUE', value: (r) => r.queueName },
          { header: 'KEY', value: (r) => r.orderingKey },
          { header: 'ATTEMPTS', value: (r) => r.attempts, right: true },
          { header: 'NEXT TRY', value: (r) => shortTime(r.nextAttemptAt?.toISOString() ?? null) },
          { header: 'LAST ERROR', value: (r) => r.lastError },
        ])}`;
      });
    } catch (err) {
      throw databaseFailure(err, url);
    }
  } finally {
    await pool.end().catch(() => {});
  }
}

export function outboxCommand(): Command {
  const outbox = new Command('outbox').description('the transactional outbox in your application\'s database: jobs written in your transactions, forwarded to Spool');

  outbox
    .command('init')
    .description('create the spool_outbox table in the application\'s database (safe to run again)')
    .addOption(databaseUrlOption())
    .option('--print-sql', 'print the DDL instead (for your own migrations)')
    .action(async (opts: { databaseUrl?: string; printSql?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      if (opts.printSql) {
        process.stdout.write(OUTBOX_SCHEMA_SQL);
        return;
      }
      const url = checkDatabaseUrl(opts.databaseUrl);
      const client = new pg.Client({ connectionString: url, application_name: 'spool-outbox-init' });
      let created: boolean;
      try {
        await client.connect();
        ({ created } = await ensureOutboxTable(client));
      } catch (err) {
        throw databaseFailure(err, url);
      } finally {
        await client.end().catch(() => {});
      }
      ctx.print({ created, databaseUrl: maskDatabaseUrl(url) }, () => (created ? `Created spool_outbox in ${maskDatabaseUrl(url)}.` : `spool_outbox already exists in ${maskDatabaseUrl(url)}; nothing changed.`));
    });

  outbox
    .command('relay')
    .description('forward committed outbox rows to Spool, each exactly once, in order per ordering key; runs until SIGINT/SIGTERM (or --once)')
    .addOption(databaseUrlOption())
    .addOption(new Option('--batch-size <n>', 'rows per transaction (1..1000)').argParser(intIn(1, 1000)).default(100))
    .addOption(new Option('--poll-ms <ms>', 'wait between looks when there was nothing to do (10..60000)').argParser(intIn(10, 60_000)).default(200))
    .option('--once', 'forward what is due, then exit (exit 1 if Spool refused rows or was unavailable)')
    .addOption(new Option('--keep-forwarded <duration>', 'delete forwarded rows this long after forwarding (30m, 1h, 7d, 0; "forever" keeps them)').argParser(keepDuration).default(3_600_000, '1h'))
    .addOption(new Option('--in-flight <n>', 'requests to Spool at once (1..16)').argParser(intIn(1, 16)).default(4))
    .addOption(new Option('--rows-per-key <n>', 'rows of one ordering key per batch, sent one after another (1..1000)').argParser(intIn(1, 1000)).default(10))
    .addOption(new Option('--log-interval <duration>', 'how often to log progress (rows forwarded, rows waiting, lag)').argParser(logInterval).default(10_000, '10s'))
    .action(async (opts: RelayOptions, command: Command) => relay(contextFor(command), opts));

  outbox
    .command('status')
    .description('rows waiting, how far behind the relay is, and the rows Spool refused')
    .addOption(databaseUrlOption())
    .addOption(new Option('--limit <n>', 'failing rows to list (1..1000)').argParser(intIn(1, 1000)).default(20))
    .action(async (opts: { databaseUrl?: string; limit: number }, command: Command) => status(contextFor(command), opts.databaseUrl, opts.limit));

  return outbox;
}
