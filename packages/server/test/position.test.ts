import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RealtimeEvent } from '../src/realtime/events.js';
import { StreamPosition } from '../src/realtime/position.js';

const event = (id: number): RealtimeEvent => ({ id, organizationId: 'o', jobId: 'j', queueName: 'q', fromStatus: null, toStatus: 'pending', envelopes: [] });

describe('StreamPosition (SSE resume tokens)', () => {
  it('names ids that were not visible yet in the token, and drops them once delivered', () => {
    const position = new StreamPosition(10);
    const tokens: string[] = [];
    position.apply({ events: [event(11), event(13)], scannedTo: 13, gaps: [12] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens, ['11', '13~12']);
    position.apply({ events: [event(12)], scannedTo: 13, gaps: [] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens.slice(2), ['13']);
  });

  it('parses its tokens and ignores garbage', () => {
    assert.deepEqual(StreamPosition.parse('42~40,41')?.token(), '42~40,41');
    assert.equal(StreamPosition.parse('x'), null);
    assert.equal(StreamPosition.parse(''), null);
  });

  it('skips events already given before a resume, delivers the missing ones', () => {
    const position = StreamPosition.parse('20~15')!;
    const got: number[] = [];
    position.apply({ events: [event(15), event(18), event(21)], scannedTo: 21, gaps: [] }, (e) => got.push(e.id));
    assert.deepEqual(got, [15, 21]);
  });
});
