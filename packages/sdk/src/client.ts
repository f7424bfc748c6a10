import { Transport, type TransportOptions } from './http.js';
import { EventsResource } from './resources/events.js';
import { DlqResource, JobsResource } from './resources/jobs.js';
import { ApiKeysResource, AuthResource, BillingResource, OrganizationsResource } from './resources/organizations.js';
import { QueuesResource, WorkersResource } from './resources/queues.js';
import { SchedulesResource, WorkflowsResource } from './resources/schedules.js';
import { AdminResource, DashboardResource, HealthResource } from './resources/system.js';
import type { Api } from './resources/resource.js';
import { WebhooksResource } from './resources/webhooks.js';

export type SpoolClientOptions = TransportOptions;

/**
 * A typed client for a Spool (or any Spooled-v1-compatible) server. Methods
 * take and return camelCase objects; the wire is snake_case. Every method
 * accepts `{ signal, timeoutMs }` last. Resources are typed structurally
 * (`Api<…>`) so that test doubles (`@spool/sdk/testing`) fit where a client goes. Refusals throw `SpoolApiError`
 * subclasses; unreachable servers throw `SpoolNetworkError`/`SpoolTimeoutError`.
 *
 * ```ts
 * const spool = new SpoolClient({ baseUrl: 'http://localhost:8080', apiKey: process.env.SPOOL_API_KEY });
 * const { id } = await spool.jobs.create({ queueName: 'emails', payload: { to: 'a@example.com' } });
 * ```
 */
export class SpoolClient {
  readonly baseUrl: string;
  readonly jobs: Api<JobsResource>;
  readonly dlq: Api<DlqResource>;
  readonly queues: Api<QueuesResource>;
  readonly workers: Api<WorkersResource>;
  readonly schedules: Api<SchedulesResource>;
  readonly workflows: Api<WorkflowsResource>;
  readonly webhooks: Api<WebhooksResource>;
  readonly apiKeys: Api<ApiKeysResource>;
  readonly organizations: Api<OrganizationsResource>;
  readonly auth: Api<AuthResource>;
  readonly billing: Api<BillingResource>;
  readonly dashboard: Api<DashboardResource>;
  readonly health: Api<HealthResource>;
  readonly admin: Api<AdminResource>;
  /** Realtime events (Server-Sent Events) as async iterables. */
  readonly events: Api<EventsResource>;

  constructor(options: SpoolClientOptions = {}) {
    const transport = new Transport(options);
    this.baseUrl = transport.baseUrl;
    this.jobs = new JobsResource(transport);
    this.dlq = new DlqResource(transport);
    this.queues = new QueuesResource(transport);
    this.workers = new WorkersResource(transport);
    this.schedules = new SchedulesResource(transport);
    this.workflows = new WorkflowsResource(transport);
    this.webhooks = new WebhooksResource(transport);
    this.apiKeys = new ApiKeysResource(transport);
    this.organizations = new OrganizationsResource(transport);
    this.auth = new AuthResource(transport);
    this.billing = new BillingResource(transport);
    this.dashboard = new DashboardResource(transport);
    this.health = new HealthResource(transport);
    this.admin = new AdminResource(transport);
    this.events = new EventsResource(transport);
  }
}
