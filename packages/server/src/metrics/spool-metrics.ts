import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { databaseDoctor, type CompleteOutcome, type Db, type HistoryCountRow, type LoopService, type Service } from '@spool/engine';
import { diagnose, type DoctorCheck } from './doctor.js';
import { QueueAggregates } from './aggregates.js';

export interface SpoolMetricsOptions {
  db: Db;
  /** Maintenance services whose `counters` are exported. */
  services?: LoopService[];
  refreshMs: number;
  /** Most (organization, queue) pairs with series of their own; later ones share `(other)` (METRICS_MAX_QUEUES). */
  maxQueues?: number;
  log?: (message: string, err?: unknown) => void;
}

/** The queue label of series past the cardinality bound: not a valid queue name, so it never collides with one. */
export const OTHER_QUEUE = '(other)';

/**
 * Bounded label cardinality. The first `max` (organization, queue) pairs seen
 * keep their queue name for the life of the process; later ones are counted
 * under their organization's `(other)` series, so a tenant with thousands of
 * queues cannot make /metrics (and Prometheus) grow without limit.
 */
class QueueLabels {
  readonly #known = new Set<string>();

  constructor(readonly max: number) {}

  queue(organizationId: string, queue: string): string {
    const key = `${organizationId}\u0000${queue}`;
    if (this.#known.has(key)) return queue;
    if (this.#known.size >= this.max) return OTHER_QUEUE;
    this.#known.add(key);
    return queue;
  }
}

/** What a claim response knows about each leased job. */
export interface ClaimedJob {
  organization_id: string;
  queue_name: string;
  created_at: Date;
  scheduled_at: Date | null;
  /** Set to the database's now() by the claim: the start time of this attempt. */
  updated_at: Date;
}

/** What a complete response knows about each finished job. */
export interface FinishedJob {
  organizationId: string;
  queueName: string;
  startedAt: Date | null;
  completedAt: Date;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUEUE_LABELS = ['organization_id', 'queue'] as const;

type Child = { observe(value: number): void };

/**
 * Everything /metrics exports (names in docs/metrics.md). Per-request
 * observations (HTTP, claim latency, processing duration) are in-process and
 * cheap; per-queue state comes from `QueueAggregates`' cached snapshot, so a
 * scrape only serialises memory.
 */
/** The per-event counter a history row adds to (dead-lettering is counted by its target status). */
function eventOf(row: HistoryCountRow): 'enqueued' | 'started' | 'completed' | 'failed' | null {
  if (row.event === 'create') return 'enqueued';
  if (row.event === 'claim') return 'started';
  if (row.event === 'complete') return 'completed';
  if ((row.event === 'fail_retry' || row.event === 'fail_final' || row.event === 'lease_expired' || row.event === 'timeout') && row.to_status !== 'cancelled') return 'failed';
  return null;
}

export class SpoolMetrics implements Service {
  readonly name = 'metrics';
  readonly registry = new Registry();
  readonly aggregates: QueueAggregates;
  readonly #services: LoopService[];
  readonly #httpRequests: Counter<'method' | 'route' | 'status_code'>;
  readonly #httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly #startLatency: Histogram<(typeof QUEUE_LABELS)[number]>;
  readonly #processing: Histogram<(typeof QUEUE_LABELS)[number]>;
  readonly #transitions: Counter<'organization_id' | 'queue' | 'status'>;
  /** Per-event counters under their own names, from the same history rows as `#transitions`. */
  readonly #events: Record<'enqueued' | 'started' | 'completed' | 'failed' | 'deadlettered', Counter<(typeof QUEUE_LABELS)[number]>>;
  readonly #retries: Counter<'organization_id' | 'queue'>;
  readonly #leasesExpired: Counter<'organization_id' | 'queue'>;
  readonly #claimDuration: Histogram;
  readonly #db: Db;
  readonly #labels: QueueLabels;
  /** (when, how many) expired leases folded per refresh: the doctor's last hour. */
  readonly #expiredLeases: { at: number; count: number }[] = [];
  // Label lookups hash an object; cache the child per queue for the hot path.
  readonly #latencyChildren = new Map<string, Child>();
  readonly #processingChildren = new Map<string, Child>();

  constructor(options: SpoolMetricsOptions) {
    this.#services = options.services ?? [];
    this.#db = options.db;
    this.#labels = new QueueLabels(options.maxQueues ?? 1000);
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.aggregates = new QueueAggregates(options.db, { refreshMs: options.refreshMs, log: options.log }, (rows) => this.#countTransitions(rows));

    this.#httpRequests = new Counter({ name: 'http_requests_total', help: 'HTTP requests by method, route pattern and status code.', labelNames: ['method', 'route', 'status_code'], registers });
    this.#httpDuration = new Histogram({ name: 'http_request_duration_seconds', help: 'HTTP request duration in seconds, from request received to response sent.', labelNames: ['method', 'route', 'status_code'], buckets: HTTP_BUCKETS, registers });
    this.#startLatency = new Histogram({ name: 'spooled_job_start_latency_seconds', help: 'Time from when a job became runnable (created, or its scheduled/backoff time) to its claim, observed by this process.', labelNames: QUEUE_LABELS, buckets: LATENCY_BUCKETS, registers });
    this.#processing = new Histogram({ name: 'spooled_job_processing_duration_seconds', help: 'Time from first start to completion of jobs completed through this process.', labelNames: QUEUE_LABELS, buckets: DURATION_BUCKETS, registers });
    this.#transitions = new Counter({ name: 'spooled_job_transitions_total', help: 'Jobs entering each status, from job_history (cluster-wide, counted since this process first served /metrics).', labelNames: ['organization_id', 'queue', 'status'], registers });
    const eventCounter = (name: string, help: string) => new Counter({ name, help: `${help} (cluster-wide, from job_history).`, labelNames: QUEUE_LABELS, registers });
    this.#events = {
      enqueued: eventCounter('spooled_jobs_enqueued_total', 'Jobs created'),
      started: eventCounter('spooled_jobs_started_total', 'Claims: every start of an attempt, re-runs included'),
      completed: eventCounter('spooled_jobs_completed_total', 'Jobs completed'),
      failed: eventCounter('spooled_jobs_failed_total', 'Attempts that failed or lost their lease (retried or not; cancellations excluded)'),
      deadlettered: eventCounter('spooled_jobs_deadlettered_total', 'Jobs moved to the dead-letter queue'),
    };
    this.#retries = new Counter({ name: 'spooled_job_retries_total', help: 'Attempts that failed or lost their lease and were put back for another try (cluster-wide).', labelNames: QUEUE_LABELS, registers });
    this.#leasesExpired = new Counter({ name: 'spooled_job_leases_expired_total', help: 'Expired leases reclaimed by the lease reaper (cluster-wide).', labelNames: QUEUE_LABELS, registers });
    this.#claimDuration = new Histogram({ name: 'spooled_claim_duration_seconds', help: 'Duration of the claim statement in this process (REST and gRPC claims; long-poll waits excluded).', buckets: LATENCY_BUCKETS, registers });
    this.#doctorGauges(registers);
    this.#defineSnapshotGauges(registers);
  }

  #defineSnapshotGauges(registers: Registry[]): void {
    const aggregates = this.aggregates;
    const queueOf = (row: { organization_id: string; queue_name: string }) => this.#labels.queue(row.organization_id, row.queue_name);
    new Gauge({
      name: 'spooled_jobs', help: 'Unfinished jobs per queue and status (pending, scheduled, processing).', labelNames: ['organization_id', 'queue', 'status'], registers,
      collect() {
        this.reset();
        for (const row of aggregates.snapshot?.gauges ?? []) {
          // inc, not set: queues past the bound add up in `(other)`.
          if (row.status !== 'deadletter') this.inc({ organization_id: row.organization_id, queue: queueOf(row), status: row.status }, row.count);
        }
      },
    });
    new Gauge({
      name: 'spooled_queue_oldest_pending_age_seconds', help: 'Seconds since the oldest runnable pending job of the queue became runnable (0 when none waits).', labelNames: QUEUE_LABELS, registers,
      collect() {
        this.reset();
        const snapshot = aggregates.snapshot;
        // The oldest of the queues sharing a series (`(other)`) is that series' age.
        const oldest = new Map<string, { labels: { organization_id: string; queue: string }; age: number }>();
        for (const row of snapshot?.gauges ?? []) {
          if (row.status !== 'pending') continue;
          const age = row.oldest ? Math.max(0, (snapshot!.at - row.oldest.getTime()) / 1000) : 0;
          const labels = { organization_id: row.organization_id, queue: queueOf(row) };
          const key = `${labels.organization_id}\u0000${labels.queue}`;
          const seen = oldest.get(key);
          if (!seen || age > seen.age) oldest.set(key, { labels, age });
        }
        for (const { labels, age } of oldest.values()) this.set(labels, age);
      },
    });
    new Gauge({
      name: 'spooled_dead_letter_jobs', help: 'Jobs in the dead-letter queue.', labelNames: QUEUE_LABELS, registers,
      collect() {
        this.reset();
        for (const row of aggregates.snapshot?.gauges ?? []) {
          if (row.status === 'deadletter') this.inc({ organization_id: row.organization_id, queue: queueOf(row) }, row.count);
        }
      },
    });
    new Gauge({
      name: 'spooled_workers', help: 'Registered workers by status.', labelNames: ['status'], registers,
      collect() {
        this.reset();
        for (const status of ['healthy', 'degraded', 'draining', 'offline']) this.set({ status }, 0);
        for (const row of aggregates.snapshot?.workers ?? []) this.set({ status: row.status }, row.count);
      },
    });
    new Gauge({
      name: 'spooled_metrics_refresh_duration_seconds', help: 'How long the last refresh of the cached queue aggregates took.', registers,
      collect() {
        this.set((aggregates.snapshot?.durationMs ?? 0) / 1000);
      },
    });
    new Gauge({
      name: 'spooled_metrics_refreshed_timestamp_seconds', help: 'Database time of the last refresh of the cached queue aggregates.', registers,
      collect() {
        this.set((aggregates.snapshot?.at ?? 0) / 1000);
      },
    });
    const services = this.#services;
    new Counter({
      name: 'spooled_maintenance_operations_total', help: 'What each maintenance service did (e.g. lease-reaper rescued, scheduled-promoter promoted, errors).', labelNames: ['service', 'operation'], registers,
      collect() {
        this.reset();
        for (const service of services) {
          for (const [operation, total] of service.counters) this.inc({ service: service.name, operation }, total);
        }
      },
    });
  }

  /** The queue doctor's database signals (docs/observability.md), from the cached snapshot; cluster-wide, so the operator's only. */
  #doctorGauges(registers: Registry[]): void {
    const aggregates = this.aggregates;
    new Gauge({
      name: 'spooled_db_oldest_transaction_age_seconds', help: 'Age of the oldest open transaction of another session that holds back vacuum in this database (0 when none).', registers,
      collect() {
        this.set(aggregates.snapshot?.doctor.oldest_transaction?.age_seconds ?? 0);
      },
    });
    new Gauge({
      name: 'spooled_db_idle_in_transaction_sessions', help: 'Sessions of this database idle in a transaction.', registers,
      collect() {
        this.set(aggregates.snapshot?.doctor.idle_in_transaction ?? 0);
      },
    });
    new Gauge({
      name: 'spooled_db_table_dead_tuples', help: "Dead tuples of Spool's hot tables (pg_stat_user_tables).", labelNames: ['table'], registers,
      collect() {
        this.reset();
        for (const table of aggregates.snapshot?.doctor.tables ?? []) this.set({ table: table.table }, table.dead_tuples);
      },
    });
    new Gauge({
      name: 'spooled_db_table_last_vacuum_age_seconds', help: "Seconds since Spool's hot tables were last vacuumed (auto or manual); absent when never.", labelNames: ['table'], registers,
      collect() {
        this.reset();
        const snapshot = aggregates.snapshot;
        if (!snapshot) return;
        for (const table of snapshot.doctor.tables) {
          const last = Math.max(...[table.last_autovacuum, table.last_vacuum].map((v) => (v ? Date.parse(v) : 0)));
          if (last > 0) this.set({ table: table.table }, Math.max(0, (snapshot.at - last) / 1000));
        }
      },
    });
  }

  /** Runs one claim statement and records its duration (`spooled_claim_duration_seconds`, the doctor's claim p99). */
  async timeClaim<T>(claim: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await claim();
    } finally {
      this.#claimDuration.observe((performance.now() - started) / 1000);
    }
  }

  /** The claim statement's p99 in this process, estimated from the histogram's buckets (upper bound); null before any claim. */
  async #claimP99Ms(): Promise<number | null> {
    const { values } = await this.#claimDuration.get();
    const buckets = values.filter((v) => v.metricName === 'spooled_claim_duration_seconds_bucket');
    const total = buckets.find((v) => v.labels.le === '+Inf')?.value ?? 0;
    if (total === 0) return null;
    const bound = buckets.find((v) => v.value >= total * 0.99);
    const le = bound?.labels.le;
    return le === undefined || le === '+Inf' ? LATENCY_BUCKETS[LATENCY_BUCKETS.length - 1]! * 1000 : Number(le) * 1000;
  }

  /** The queue doctor now: a fresh reading of the database and this process's timings, as checks worst first. */
  async doctor(): Promise<{ checkedAt: Date; checks: DoctorCheck[] }> {
    // Reading /metrics or the doctor keeps the counters (expired leases) folding.
    await this.aggregates.touch();
    const reading = await databaseDoctor(this.#db);
    const hourAgo = Date.now() - 3_600_000;
    while (this.#expiredLeases.length > 0 && this.#expiredLeases[0]!.at < hourAgo) this.#expiredLeases.shift();
    const leasesExpiredLastHour = this.#expiredLeases.reduce((sum, entry) => sum + entry.count, 0);
    return { checkedAt: reading.at, checks: diagnose(reading, { claimP99Ms: await this.#claimP99Ms(), leasesExpiredLastHour }) };
  }

  #countTransitions(rows: HistoryCountRow[]): void {
    let expired = 0;
    for (const row of rows) if (row.event === 'lease_expired') expired += row.count;
    if (expired > 0) this.#expiredLeases.push({ at: Date.now(), count: expired });
    for (const row of rows) {
      const labels = { organization_id: row.organization_id, queue: this.#labels.queue(row.organization_id, row.queue_name) };
      if (row.to_status) this.#transitions.inc({ ...labels, status: row.to_status }, row.count);
      const event = eventOf(row);
      if (event) this.#events[event].inc(labels, row.count);
      if (row.to_status === 'deadletter') this.#events.deadlettered.inc(labels, row.count);
      if (row.event === 'lease_expired') this.#leasesExpired.inc(labels, row.count);
      if (row.event === 'fail_retry' || ((row.event === 'lease_expired' || row.event === 'timeout') && row.to_status === 'pending')) this.#retries.inc(labels, row.count);
    }
  }

  #child(map: Map<string, Child>, histogram: Histogram<(typeof QUEUE_LABELS)[number]>, organizationId: string, queue: string): Child {
    const key = `${organizationId}\u0000${queue}`;
    let child = map.get(key);
    if (!child) {
      child = histogram.labels({ organization_id: organizationId, queue: this.#labels.queue(organizationId, queue) });
      map.set(key, child);
    }
    return child;
  }

  /** Records enqueue-to-start latency for jobs a claim just leased (database clock on both ends). */
  observeClaimed(jobs: Iterable<ClaimedJob>): void {
    for (const job of jobs) {
      const runnable = Math.max(job.created_at.getTime(), job.scheduled_at?.getTime() ?? 0);
      this.#child(this.#latencyChildren, this.#startLatency, job.organization_id, job.queue_name).observe(Math.max(0, job.updated_at.getTime() - runnable) / 1000);
    }
  }

  /** Records processing duration for jobs a complete call just finished. */
  observeCompleted(jobs: Iterable<FinishedJob>): void {
    for (const job of jobs) {
      if (!job.startedAt) continue;
      this.#child(this.#processingChildren, this.#processing, job.organizationId, job.queueName).observe(Math.max(0, job.completedAt.getTime() - job.startedAt.getTime()) / 1000);
    }
  }

  /** `observeCompleted` for jobCompleteMany's outcomes (refused items are skipped). */
  observeCompletedOutcomes(organizationId: string, outcomes: Iterable<CompleteOutcome>): void {
    for (const outcome of outcomes) {
      if (!outcome.ok || !outcome.startedAt) continue;
      this.#child(this.#processingChildren, this.#processing, organizationId, outcome.queueName).observe(Math.max(0, outcome.completedAt.getTime() - outcome.startedAt.getTime()) / 1000);
    }
  }

  /** Counts and times every HTTP request by route pattern (never the raw URL: ids would explode cardinality). */
  installHttpHooks(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) };
      this.#httpRequests.inc(labels);
      this.#httpDuration.observe(labels, reply.elapsedTime / 1000);
      done();
    });
  }

  /** The Prometheus text exposition; starts (or keeps alive) the aggregate refresh loop. */
  async render(): Promise<string> {
    await this.aggregates.touch();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  start(): void {}

  async stop(): Promise<void> {
    await this.aggregates.stop();
  }
}
