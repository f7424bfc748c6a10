/**
 * The worker's cancel listener: reconnects with the last event id after a
 * dropped stream, and gives up quietly on a server without the stream. The
 * event source here is a scripted stand-in for `client.events`; the real
 * stream is covered by worker-e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NotFoundError, SpoolNetworkError, type RealtimeEvent, type StreamParams } from '../src/index.js';
import { CancelListener } from '../src/worker/cancel-listener.js';

type Script = (params: StreamParams) => AsyncGenerator<RealtimeEvent>;

function source(scripts: Script[]) {
  const calls: StreamParams[] = [];
  return {
    calls,
    events: {
      stream(params: StreamParams = {}, options?: { signal?: AbortSignal }): AsyncGenerator<RealtimeEvent> {
        calls.push(params);
        const script = scripts.shift();
        if (script) return script(params);
        // Nothing more scripted: an open stream that stays quiet until the listener stops.
        return (async function* () {
          await new Promise((_resolve, reject) => options?.signal?.addEventListener('abort', () => reject(options.signal!.reason)));
        })();
      },
    },
  };
}

const cancelEvent = (jobId: string, id: string): RealtimeEvent => ({ type: 'job.cancel_requested', data: { jobId, queueName: 'q', workerId: 'w1' }, id });

test('reconnects after a dropped stream and resumes from the last event id', async () => {
  const { calls, events } = source([
    async function* () {
      yield cancelEvent('job-1', '10');
      throw new SpoolNetworkError('connection reset', 'http://x', { code: 'ECONNRESET' });
    },
    async function* () {
      yield cancelEvent('job-2', '12');
    },
  ]);
  const cancelled: [string, string | null][] = [];
  const errors: unknown[] = [];
  const listener = new CancelListener(events, { queue: 'q', retryDelayMs: 10, onCancel: (id, worker) => cancelled.push([id, worker]), onError: (err) => errors.push(err) });
  listener.start();
  const deadline = Date.now() + 2000;
  while ((cancelled.length < 2 || calls.length < 3) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  await listener.stop();
  assert.deepEqual(cancelled, [['job-1', 'w1'], ['job-2', 'w1']]);
  assert.equal(errors.length, 1, 'the dropped stream is reported once');
  assert.deepEqual(calls.slice(0, 3).map((c) => [c.queueName, c.events, c.lastEventId]), [
    ['q', ['job.cancel_requested'], undefined],
    ['q', ['job.cancel_requested'], '10'],
    ['q', ['job.cancel_requested'], '12'], // the second stream ended: a third one resumes after it
  ]);
});

test('a server without the stream (404) ends the listener without an error', async () => {
  const { calls, events } = source([
    async function* () {
      throw new NotFoundError({ status: 404, code: 'NOT_FOUND', message: 'Route GET:/api/v1/events/queues/q not found' });
    },
  ]);
  const errors: unknown[] = [];
  const listener = new CancelListener(events, { queue: 'q', retryDelayMs: 10, onCancel: () => {}, onError: (err) => errors.push(err) });
  listener.start();
  await new Promise((resolve) => setTimeout(resolve, 100));
  await listener.stop();
  assert.equal(calls.length, 1, 'no reconnect');
  assert.deepEqual(errors, []);
});
