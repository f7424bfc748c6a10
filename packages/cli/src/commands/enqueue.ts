/** `spool enqueue <queue> [payload]` and `spool enqueue <queue> --file jobs.ndjson`. */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Command, Option } from 'commander';
import { AuthenticationError, AuthorizationError, SpoolNetworkError, SpoolTimeoutError, type BulkJobItem, type SpoolClient } from '@spool/sdk';
import { contextFor, intIn, parseJson, UsageError, type Context } from '../context.js';
import { Progress } from '../output.js';

interface EnqueueOptions {
  priority?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  delay?: number;
  at?: string;
  idempotencyKey?: string;
  tags?: string;
  file?: string;
  envelope?: boolean;
  chunkSize: number;
  inFlight: number;
}

export interface BulkSummary {
  queueName: string;
  total: number;
  created: number;
  existing: number;
  failed: { line: number; error: string }[];
  durationMs: number;
}

export function enqueueCommand(): Command {
  return new Command('enqueue')
    .description('enqueue one job, or many from a file of JSON lines (--file)')
    .argument('<queue>', 'queue name')
    .argument('[payload]', 'job payload as JSON', '{}')
    .addOption(new Option('--priority <n>', 'priority, higher runs first (-100..100)').argParser(intIn(-100, 100)))
    .addOption(new Option('--max-retries <n>', 'retries before the dead-letter queue (0..100)').argParser(intIn(0, 100)))
    .addOption(new Option('--timeout-seconds <n>', 'job timeout (1..86400)').argParser(intIn(1, 86_400)))
    .addOption(new Option('--delay <seconds>', 'run no earlier than this many seconds from now').argParser(intIn(0, 365 * 86_400)).conflicts('at'))
    .option('--at <time>', 'run no earlier than this ISO time')
    .option('--idempotency-key <key>', 'a repeat with the same key returns the first job')
    .option('--tags <json>', 'tags object')
    .option('-f, --file <path>', 'one JSON payload per line ("-" = stdin), sent in bulk')
    .option('--envelope', 'with --file: each line is {"payload", "priority"?, "idempotency_key"?, "scheduled_at"?}')
    .addOption(new Option('--chunk-size <n>', 'with --file: jobs per bulk request (1..1000)').argParser(intIn(1, 1000)).default(100))
    .addOption(new Option('--in-flight <n>', 'with --file: bulk requests at once (1..16)').argParser(intIn(1, 16)).default(4))
    .action(async (queue: string, payloadText: string, opts: EnqueueOptions, command: Command) => {
      const ctx = contextFor(command);
      if (opts.file !== undefined) return enqueueFile(ctx, queue, opts, command.args.length > 1);
      const payload = parseJson(payloadText, 'payload');
      const answer = await ctx.client.jobs.create({
        queueName: queue,
        payload,
        priority: opts.priority,
        maxRetries: opts.maxRetries,
        timeoutSeconds: opts.timeoutSeconds,
        scheduledAt: scheduledAt(opts),
        idempotencyKey: opts.idempotencyKey,
        tags: opts.tags === undefined ? undefined : (parseJson(opts.tags, '--tags') as Record<string, unknown>),
      });
      ctx.print(answer, () => (answer.created ? `Enqueued job ${answer.id} on ${queue}.` : `Job ${answer.id} already existed (same idempotency key); nothing enqueued.`));
    });
}

function scheduledAt(opts: EnqueueOptions): string | undefined {
  if (opts.delay !== undefined) return new Date(Date.now() + opts.delay * 1000).toISOString();
  if (opts.at === undefined) return undefined;
  const at = Date.parse(opts.at);
  if (Number.isNaN(at)) throw new UsageError(`--at is not a date: "${opts.at}"`);
  return new Date(at).toISOString();
}

async function assertReadableFile(path: string): Promise<void> {
  try {
    if (!(await stat(path)).isFile()) throw new UsageError(`--file ${path} is not a file`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`cannot read --file ${path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

async function countLines(path: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(path)) for (const byte of chunk as Buffer) if (byte === 10) lines += 1;
  return lines;
}

/** One NDJSON line → a bulk item, or the reason it is not one. */
function parseLine(text: string, envelope: boolean): BulkJobItem | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  if (!envelope) return { payload: value };
  if (value === null || typeof value !== 'object' || !('payload' in value)) return 'expected an object with a "payload" key (--envelope)';
  const line = value as Record<string, unknown>;
  return {
    payload: line.payload,
    priority: typeof line.priority === 'number' ? line.priority : undefined,
    idempotencyKey: (line.idempotency_key ?? line.idempotencyKey) as string | undefined,
    scheduledAt: (line.scheduled_at ?? line.scheduledAt) as string | undefined,
  };
}

function fatal(err: unknown): boolean {
  return err instanceof SpoolNetworkError || err instanceof SpoolTimeoutError || err instanceof AuthenticationError || err instanceof AuthorizationError;
}

async function sendChunk(client: SpoolClient, queue: string, opts: EnqueueOptions, items: BulkJobItem[], lines: number[], summary: BulkSummary): Promise<void> {
  try {
    const answer = await client.jobs.bulk({
      queueName: queue,
      jobs: items,
      defaultPriority: opts.priority,
      defaultMaxRetries: opts.maxRetries,
      defaultTimeoutSeconds: opts.timeoutSeconds,
    });
    for (const ok of answer.succeeded) ok.created ? (summary.created += 1) : (summary.existing += 1);
    for (const bad of answer.failed) summary.failed.push({ line: lines[bad.index] ?? -1, error: bad.error });
  } catch (err) {
    if (fatal(err)) throw err;
    const message = err instanceof Error ? err.message : String(err);
    for (const line of lines) summary.failed.push({ line, error: message });
  }
}

async function enqueueFile(ctx: Context, queue: string, opts: EnqueueOptions, payloadGiven: boolean): Promise<void> {
  if (payloadGiven) throw new UsageError('give either a payload or --file, not both');
  const fromStdin = opts.file === '-';
  const started = Date.now();
  const summary: BulkSummary = { queueName: queue, total: 0, created: 0, existing: 0, failed: [], durationMs: 0 };
  if (!fromStdin) await assertReadableFile(opts.file!);
  const progress = new Progress(!fromStdin && process.stderr.isTTY ? await countLines(opts.file!) : null);
  const input = fromStdin ? process.stdin : createReadStream(opts.file!);

  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;
  let items: BulkJobItem[] = [];
  let lines: number[] = [];
  const flush = async () => {
    if (items.length === 0) return;
    const chunk = sendChunk(ctx.client, queue, opts, items, lines, summary).then(
      () => progress.update(summary.created + summary.existing + summary.failed.length),
      (err: unknown) => void (failure ??= err),
    );
    items = [];
    lines = [];
    inFlight.add(chunk);
    void chunk.finally(() => inFlight.delete(chunk));
    while (inFlight.size >= opts.inFlight) await Promise.race(inFlight);
  };

  let lineNo = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    lineNo += 1;
    if (failure) break;
    if (text.trim() === '') continue;
    summary.total += 1;
    const item = parseLine(text, Boolean(opts.envelope));
    if (typeof item === 'string') {
      summary.failed.push({ line: lineNo, error: item });
      continue;
    }
    items.push(item);
    lines.push(lineNo);
    if (items.length >= opts.chunkSize) await flush();
  }
  if (!failure) await flush();
  await Promise.all(inFlight);
  if (failure) throw failure;
  progress.finish(summary.created + summary.existing + summary.failed.length);
  summary.durationMs = Date.now() - started;
  summary.failed.sort((a, b) => a.line - b.line);
  ctx.print(summary, () => describeSummary(summary));
  if (summary.failed.length > 0) process.exitCode = 1;
}

function describeSummary(summary: BulkSummary): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const seconds = (summary.durationMs / 1000).toFixed(1);
  const lines = [
    `Enqueued ${n(summary.created + summary.existing)} of ${n(summary.total)} jobs on ${summary.queueName} in ${seconds} s (${n(summary.created)} new, ${n(summary.existing)} already existed, ${n(summary.failed.length)} failed).`,
  ];
  for (const bad of summary.failed.slice(0, 20)) lines.push(`  line ${bad.line}: ${bad.error}`);
  if (summary.failed.length > 20) lines.push(`  … and ${n(summary.failed.length - 20)} more (use --json for all)`);
  return lines.join('\n');
}
