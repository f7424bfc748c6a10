/** `@spool/sdk/testing`: an in-memory client for unit tests of code that enqueues or processes jobs. */
export { FakeSpoolClient, type JobMatch, type RunJobsOptions, type RunJobsResult, type WorkersApi } from './fake-client.js';
export { FakeJobs, FakeDlq, FakeDlqReplays, type JobsApi, type DlqApi, type DlqReplaysApi } from './fake-jobs.js';
export { matches } from './match.js';
