import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LogName, RealtimeEvent } from '../src/realtime/events.js';
import { LogPosition, StreamPosition } from '../src/realtime/position.js';

const event = (id: number, log: LogName = 'history'): RealtimeEvent => ({
  log, id, organizationId: 'o', jobId: 'j', queueName: 'q', fromStatus: null, toStatus: 'pending', eventType: null, envelopes: [],
});
const at = (history: number, events?: number) => new StreamPosition({
  history: new LogPosition(history),
  ...(events === undefined ? {} : { events: new LogPosition(events) }),
});

describe('StreamPosition (SSE resume tokens)', () => {
  it('names ids that were not visible yet in the token, and drops them once delivered', () => {
    const position = at(10, 0);
    const tokens: string[] = [];
    position.apply({ log: 'history', events: [event(11), event(13)], scannedTo: 13, gaps: [12] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens, ['11.e0', '13~12.e0']);
    position.apply({ log: 'history', events: [event(12)], scannedTo: 13, gaps: [] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens.slice(2), ['13.e0']);
  });

  it('keeps the two logs apart: the same id in each is two events', () => {
    const position = at(5, 5);
    const got: string[] = [];
    position.apply({ log: 'events', events: [event(6, 'events'), event(8, 'events')], scannedTo: 8, gaps: [7] }, (e, token) => got.push(`${e.log}:${e.id}@${token()}`));
    position.apply({ log: 'history', events: [event(6)], scannedTo: 6, gaps: [] }, (e, token) => got.push(`${e.log}:${e.id}@${token()}`));
    assert.deepEqual(got, ['events:6@5.e6', 'events:8@5.e8~7', 'history:6@6.e8~7']);
  });

  it('parses its tokens and ignores garbage', () => {
    assert.equal(StreamPosition.parse('42~40,41.e7~5')?.token(), '42~40,41.e7~5');
    assert.equal(StreamPosition.parse('42.e7')?.token(), '42.e7');
    assert.equal(StreamPosition.parse('x'), null);
    assert.equal(StreamPosition.parse(''), null);
    assert.equal(StreamPosition.parse('42.x7'), null);
    assert.equal(StreamPosition.parse('42.e'), null);
  });

  it('reads a token from before the event log as a history position only', () => {
    const position = StreamPosition.parse('42~40,41')!;
    assert.equal(position.logs.history?.token(), '42~40,41');
    assert.equal(position.logs.events, undefined);
  });

  it('skips events already given before a resume, delivers the missing ones, per log', () => {
    const position = StreamPosition.parse('20~15.e3~2')!;
    const got: string[] = [];
    position.apply({ log: 'history', events: [event(15), event(18), event(21)], scannedTo: 21, gaps: [] }, (e) => got.push(`h${e.id}`));
    position.apply({ log: 'events', events: [event(2, 'events'), event(3, 'events'), event(4, 'events')], scannedTo: 4, gaps: [] }, (e) => got.push(`e${e.id}`));
    assert.deepEqual(got, ['h15', 'h21', 'e2', 'e4']);
    assert.equal(position.token(), '21.e4');
  });
});
