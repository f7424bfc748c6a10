import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromWire, toCamelKey, toSnakeKey, toWire } from '../src/case.js';

test('keys convert both ways, digits keep their underscore', () => {
  const pairs: [string, string][] = [
    ['leaseId', 'lease_id'],
    ['completedJobs24h', 'completed_jobs_24h'],
    ['jobsCreated1h', 'jobs_created_1h'],
    ['maxPayloadSizeBytes', 'max_payload_size_bytes'],
    ['id', 'id'],
  ];
  for (const [camel, snake] of pairs) {
    assert.equal(toSnakeKey(camel), snake);
    assert.equal(toCamelKey(snake), camel);
  }
});

test('blob values travel verbatim in both directions; undefined is dropped on the way out', () => {
  const out = toWire({
    queueName: 'q',
    payload: { userId: 1, nested_key: { deepKey: true } },
    tags: { someTag: 'x' },
    payloadTemplate: { camelInside: 1 },
    customLimits: { maxJobs: 2 },
    items: [{ jobId: 'a', result: { okCount: 1 } }],
    scheduledAt: undefined,
  });
  assert.deepEqual(out, {
    queue_name: 'q',
    payload: { userId: 1, nested_key: { deepKey: true } },
    tags: { someTag: 'x' },
    payload_template: { camelInside: 1 },
    custom_limits: { maxJobs: 2 },
    items: [{ job_id: 'a', result: { okCount: 1 } }],
  });
  const back = fromWire({
    queue_name: 'q',
    payload: { user_id: 1 },
    metadata: { some_key: 1 },
    settings: { webhook_token: 'x' },
    details: { field_name: 'x' },
    extra: { a_b: 1 },
    usage: { jobs_today: { current: 1, is_disabled: false } },
  });
  assert.deepEqual(back, {
    queueName: 'q',
    payload: { user_id: 1 },
    metadata: { some_key: 1 },
    settings: { webhook_token: 'x' },
    details: { field_name: 'x' },
    extra: { a_b: 1 },
    usage: { jobsToday: { current: 1, isDisabled: false } },
  });
});

test('dates and non-plain values pass through untouched', () => {
  const when = new Date('2026-01-02T03:04:05.000Z');
  const out = toWire({ scheduledAt: when, list: [1, 'two', null] }) as Record<string, unknown>;
  assert.equal(out.scheduled_at, when);
  assert.deepEqual(out.list, [1, 'two', null]);
  assert.equal(JSON.stringify(out), '{"scheduled_at":"2026-01-02T03:04:05.000Z","list":[1,"two",null]}');
});
