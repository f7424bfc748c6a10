/**
 * A bulk enqueue of many items of one job_key answers and leaves the same as
 * the same items enqueued one at a time (job-enqueue.ts): per mode, 300
 * items of one key, and 100 when a job already stands for the key.
 * Dedupe and throttle items after the first take no statements of their
 * own; debounce and replace keep one round per item.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { jobEnqueue, type InsertedJob, type JobKey, type NewJob } from '@spool/engine';
import { createOrganization, createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let org: string;

before(async () => {
  t = await createTestDatabase('job-key-bulk');
  org = await createOrganization(t.pool);
});
after(async () => t.drop());

const ITEMS = 300;
const ITEMS_AFTER_STANDING = 100;

const KEYS: Record<JobKey['mode'], JobKey> = {
  dedupe: { key: 'k', mode: 'dedupe' },
  throttle: { key: 'k', mode: 'throttle', windowSecs: 60 },
  debounce: { key: 'k', mode: 'debounce', windowSecs: 60 },
  replace: { key: 'k', mode: 'replace' },
};

const items = (queueName: string, jobKey: JobKey, count: number): NewJob[] =>
  Array.from({ length: count }, (_, n) => ({ organizationId: org, queueName, payload: { n }, priority: n % 7, jobKey }));

/** The answers with ids replaced by their order of first appearance, so two queues' answers compare. */
function shape(results: InsertedJob[]): string[] {
  const ids = new Map<string, number>();
  return results.map((r) => {
    if (!ids.has(r.id)) ids.set(r.id, ids.size);
    return `${r.keyOutcome}/${r.created}/${r.status}/#${ids.get(r.id)}`;
  });
}

/** What the key left in the queue: its jobs, and the history events written for them (by event). */
async function leftIn(queue: string) {
  const jobs = await t.pool.query<{ status: string; payload: unknown; priority: number }>(
    'SELECT status, payload, priority FROM spool.jobs WHERE organization_id = $1 AND queue_name = $2 AND job_key = $3 ORDER BY created_at, id',
    [org, queue, 'k']);
  const events = await t.pool.query<{ event: string; n: number }>(
    `SELECT event, count(*)::int AS n FROM spool.job_history
     WHERE organization_id = $1 AND queue_name = $2 AND event <> 'create' GROUP BY event ORDER BY event`, [org, queue]);
  return { jobs: jobs.rows, events: events.rows };
}

/** One bulk enqueue in a transaction of its own, counting the statements it sends. */
async function bulk(jobs: NewJob[]): Promise<{ results: InsertedJob[]; statements: number }> {
  const client = await t.pool.connect();
  let statements = 0;
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  try {
    await client.query('BEGIN');
    (client as { query: unknown }).query = (...args: unknown[]) => {
      statements += 1;
      return query(...args);
    };
    const results = await jobEnqueue(client as pg.PoolClient, jobs);
    (client as { query: unknown }).query = query;
    await client.query('COMMIT');
    return { results, statements };
  } finally {
    (client as { query: unknown }).query = query;
    client.release();
  }
}

describe('a bulk of one job_key answers as single enqueues do', () => {
  for (const mode of ['dedupe', 'throttle', 'debounce', 'replace'] as const) {
    for (const standing of [false, true]) {
      const count = standing ? ITEMS_AFTER_STANDING : ITEMS;
      it(`${mode}, ${count} items${standing ? ', the key already has a job' : ''}`, async () => {
        const bulkQueue = `bulk-${mode}-${standing}`;
        const oneQueue = `one-${mode}-${standing}`;
        if (standing) {
          for (const queueName of [bulkQueue, oneQueue]) await jobEnqueue(t.pool, [{ organizationId: org, queueName, payload: { before: true }, jobKey: KEYS[mode] }]);
        }
        const { results, statements } = await bulk(items(bulkQueue, KEYS[mode], count));
        const one: InsertedJob[] = [];
        for (const job of items(oneQueue, KEYS[mode], count)) one.push(...(await jobEnqueue(t.pool, [job])));

        assert.deepEqual(shape(results), shape(one));
        assert.deepEqual(await leftIn(bulkQueue), await leftIn(oneQueue));
        if (mode === 'dedupe' || mode === 'throttle') assert.ok(statements <= 4, `${statements} statements`);
        else assert.ok(statements >= count, `one round per item: ${statements} statements`);
      });
    }
  }
});
