import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { LIMITS, SpoolError, readTraceContext, traceFieldNames, type TraceContext } from '@spool/protocol';
import { jobEnqueue, type NewJob } from '@spool/engine';
import type { AppContext } from '../app.js';
import { grantOf } from '../http/route-authorization.js';
import { admitJobs, type JobAdmission } from '../http/job-admission.js';
import { compileItemValidator } from '../http/validation.js';
import { unknownFields, warnUnknownFields } from '../http/warnings.js';
import { assertWebhookTarget, webhookPolicy } from '../webhooks/ssrf.js';
import { ConcurrencyKey, DateTime, FairnessKey, IdempotencyKey, JobKeyField, KeyOutcomeField, MaxRetries, Priority, QueueName, Tags, TimeoutSeconds, nullable } from '../wire/common.js';
import { enqueueTraceHeaders } from '../http/trace-context.js';
import { startBulkEnqueueSpan } from '../trace-spans.js';
import { actorOf } from '../http/auth.js';
import { TraceHeaders, TraceparentField, TracestateField, checkJobLimits, toNewJob } from './jobs.js';

const CONTRACT_BULK_MAX = 100;

/** One bulk item. `max_retries`, `timeout_seconds`, `expires_at`, `tags`, `completion_webhook`, `concurrency_key`, `fairness_key`, `job_key`, `traceparent` and `tracestate` per item are extensions. */
const BulkItem = Type.Object({
  payload: Type.Unknown(),
  priority: Type.Optional(Priority),
  idempotency_key: Type.Optional(nullable(IdempotencyKey)),
  scheduled_at: Type.Optional(nullable(DateTime)),
  expires_at: Type.Optional(nullable(DateTime)),
  max_retries: Type.Optional(MaxRetries),
  timeout_seconds: Type.Optional(TimeoutSeconds),
  tags: Type.Optional(nullable(Tags)),
  completion_webhook: Type.Optional(nullable(Type.String({ maxLength: 2048, format: 'uri' }))),
  concurrency_key: Type.Optional(nullable(ConcurrencyKey)),
  fairness_key: Type.Optional(nullable(FairnessKey)),
  job_key: Type.Optional(nullable(JobKeyField)),
  traceparent: Type.Optional(nullable(TraceparentField)),
  tracestate: Type.Optional(nullable(TracestateField)),
});
type BulkItem = Static<typeof BulkItem>;

const BulkBody = Type.Object({
  queue_name: QueueName,
  jobs: Type.Array(Type.Unknown(), {
    minItems: 1,
    maxItems: LIMITS.bulkJobsMax,
    description: `The contract allows 1..${CONTRACT_BULK_MAX} jobs; Spool accepts up to ${LIMITS.bulkJobsMax} (extension). Each item: { payload, priority?, idempotency_key?, scheduled_at?, and as extensions max_retries?, timeout_seconds?, expires_at?, tags?, completion_webhook?, concurrency_key?, fairness_key?, job_key?, traceparent?, tracestate? }. An item without its own traceparent takes the request's traceparent/tracestate headers. An invalid item is reported in failed; the rest are inserted. Items with a job_key are applied in order: a deduplicated, debounced, throttled or replaced item succeeds with created false, its key_outcome and the id of the job that stands.`,
  }),
  default_priority: Type.Optional(Priority),
  default_max_retries: Type.Optional(MaxRetries),
  default_timeout_seconds: Type.Optional(TimeoutSeconds),
});
type BulkBody = Static<typeof BulkBody>;

const BulkResult = Type.Object({
  succeeded: Type.Array(Type.Object({ index: Type.Integer(), job_id: Type.String(), created: Type.Boolean(), key_outcome: Type.Optional(KeyOutcomeField) })),
  failed: Type.Array(Type.Object({ index: Type.Integer(), error: Type.String() })),
  total: Type.Integer(),
  success_count: Type.Integer(),
  failure_count: Type.Integer(),
});

const validateItem = compileItemValidator(BulkItem);

/** POST /jobs/bulk (docs/compatibility.md §3.3): per-item validation, one INSERT for every valid item. */
export function jobBulkRoutes(app: FastifyInstance, ctx: AppContext): void {
  const policy = webhookPolicy(ctx.config);
  app.post<{ Body: BulkBody }>('/jobs/bulk', {
    config: { operation: 'job.create', addresses: 'body_queue' },
    schema: {
      tags: ['jobs'],
      summary: 'Create many jobs in one statement (1..1000; over 100 is a Spool extension)',
      headers: TraceHeaders,
      body: BulkBody,
      response: { 200: BulkResult },
    },
  }, async (request, reply) => {
    const auth = grantOf(request).auth;
    const body = request.body;
    // Malformed headers refuse the whole request: they are every item's default.
    const fromHeaders = enqueueTraceHeaders(request.headers);
    // Items are validated one by one below, so the route schema cannot name their unknown fields.
    warnUnknownFields(reply, body.jobs.flatMap((item, index) => unknownFields(BulkItem as never, item, `jobs[${index}]`)));
    const failed: { index: number; error: string }[] = [];
    const valid: { index: number; job: NewJob; trace: TraceContext | null; own: boolean }[] = [];
    const admissions: JobAdmission[] = [];
    // One resolution per distinct completion_webhook, not one per item.
    const targets = new Map<string, Promise<string | null>>();
    const targetRefused = (url: string) => {
      let checked = targets.get(url);
      if (!checked) {
        checked = assertWebhookTarget(url, policy, 'completion_webhook').then(() => null, (err: unknown) => {
          if (err instanceof SpoolError) return err.message;
          throw err;
        });
        targets.set(url, checked);
      }
      return checked;
    };
    for (const [index, raw] of body.jobs.entries()) {
      const prefix = `jobs[${index}]`;
      const checked = validateItem(raw, prefix);
      if (!checked.ok) {
        failed.push({ index, error: checked.message });
        continue;
      }
      const item = raw as BulkItem;
      let payloadBytes: number;
      try {
        payloadBytes = checkJobLimits(item, `${prefix}.`);
      } catch (err) {
        if (!(err instanceof SpoolError)) throw err;
        failed.push({ index, error: err.message });
        continue;
      }
      let own: TraceContext | null = null;
      if (item.traceparent != null || item.tracestate != null) {
        const read = readTraceContext(item.traceparent, item.tracestate, traceFieldNames(`${prefix}.`));
        if (!read.ok) {
          failed.push({ index, error: read.message });
          continue;
        }
        own = read.value;
      }
      const refused = item.completion_webhook ? await targetRefused(item.completion_webhook) : null;
      if (refused) {
        failed.push({ index, error: refused });
        continue;
      }
      admissions.push({ queueName: body.queue_name, payloadBytes });
      valid.push({
        index,
        own: own !== null,
        trace: own ?? fromHeaders,
        job: toNewJob(auth.organizationId, body.queue_name, {
          ...item,
          priority: item.priority ?? body.default_priority,
          max_retries: item.max_retries ?? body.default_max_retries,
          timeout_seconds: item.timeout_seconds ?? body.default_timeout_seconds,
        }, null, actorOf(auth)),
      });
    }
    // With tracing on: one span for the request; items without a context of their own are created under it.
    const span = ctx.tracing && valid.length > 0
      ? startBulkEnqueueSpan(ctx.tracing, body.queue_name, auth.organizationId, fromHeaders, valid.flatMap((v) => (v.own && v.trace ? [v.trace] : [])), valid.length)
      : null;
    for (const v of valid) {
      const trace = v.own ? v.trace : (span?.context ?? v.trace);
      v.job.traceparent = trace?.traceparent ?? null;
      v.job.tracestate = trace?.tracestate ?? null;
    }
    let inserted;
    try {
      const quota = valid.length > 0 ? await admitJobs(ctx, auth, admissions) : null;
      inserted = await jobEnqueue(quota?.db ?? ctx.db, valid.map((v) => v.job)).catch(async (err: unknown) => {
        await quota?.settle(0);
        throw err;
      });
      await quota?.settle(inserted.filter((row) => row.created).length);
    } catch (err) {
      span?.end(err);
      throw err;
    }
    span?.setAttributes({ 'spool.created_count': inserted.filter((row) => row.created).length, 'spool.refused_count': failed.length });
    span?.end();
    const succeeded = valid.map((v, i) => {
      const row = inserted[i]!;
      return row.keyOutcome ? { index: v.index, job_id: row.id, created: row.created, key_outcome: row.keyOutcome } : { index: v.index, job_id: row.id, created: row.created };
    });
    return { succeeded, failed, total: body.jobs.length, success_count: succeeded.length, failure_count: failed.length };
  });
}
