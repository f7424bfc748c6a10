import assert from 'node:assert/strict';
import { generateApiKey } from '@spool/engine';
import type { TestServer } from '../../../test-support/server.js';

/** Creates a job over HTTP and returns its id. */
export async function enqueue(server: TestServer, body: Record<string, unknown>, auth?: string): Promise<string> {
  const res = await server.request('POST', '/api/v1/jobs', { body: { payload: {}, ...body }, auth });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** Claims over HTTP; asserts 200 and returns the jobs. */
export async function claim(server: TestServer, body: Record<string, unknown>, auth?: string): Promise<any[]> {
  const res = await server.request('POST', '/api/v1/jobs/claim', { body: { worker_id: 'w1', ...body }, auth });
  assert.equal(res.status, 200, res.text);
  return res.body.jobs;
}

/** Enqueues one job on `queue` and claims it; returns the claimed job (with lease_id). */
export async function enqueueAndClaim(server: TestServer, queue: string, extra: Record<string, unknown> = {}, workerId = 'w1'): Promise<any> {
  const id = await enqueue(server, { queue_name: queue, ...extra });
  const jobs = await claim(server, { queue_name: queue, worker_id: workerId });
  assert.equal(jobs.length, 1);
  assert.equal(jobs[0].id, id);
  return jobs[0];
}

/** An API key of the server's first organization limited to `queues`. */
export async function restrictedKey(server: TestServer, queues: string[]): Promise<string> {
  const { key, hash, prefix } = generateApiKey('development');
  await server.spool.db.query(
    'INSERT INTO spool.api_keys (organization_id, name, key_hash, key_prefix, queues) VALUES ($1, $2, $3, $4, $5)',
    [server.organizationId, 'restricted', hash, prefix, queues],
  );
  return key;
}

export const MISSING_ID = '00000000-0000-4000-8000-000000000000';

/** Asserts a contract error body (docs/compatibility.md §1.4) and that its message names `field` when given. */
export function assertError(res: { status: number; body: any; text: string }, status: number, code: string, field?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
  assert.equal(typeof res.body.message, 'string');
  if (field) assert.match(res.body.message, field);
}
