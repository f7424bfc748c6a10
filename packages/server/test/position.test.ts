import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LogName, RealtimeEvent } from '../src/realtime/events.js';
import { eventsPerRow } from '../src/realtime/logs.js';
import { LogPosition, StreamPosition } from '../src/realtime/position.js';

const H = eventsPerRow('history');

/** The event at position `pos` of log row `row`. */
const event = (row: number, pos = 0, log: LogName = 'history'): RealtimeEvent => ({
  log, id: row * eventsPerRow(log) + pos, row, organizationId: 'o', jobId: 'j', queueName: 'q', fromStatus: null, toStatus: 'pending', eventType: null, envelopes: [],
});
/** Positions after the rows `history` and `events`. */
const at = (history: number, events?: number) => new StreamPosition({
  history: LogPosition.atRow(history, [], H),
  ...(events === undefined ? {} : { events: LogPosition.atRow(events, [], 1) }),
});
const last = (row: number) => row * H + H - 1;

describe('StreamPosition (SSE resume tokens)', () => {
  it('names rows that were not visible yet in the token, and drops them once delivered', () => {
    const position = at(10, 0);
    const tokens: string[] = [];
    position.apply({ log: 'history', events: [event(11), event(13)], scannedTo: 13, gaps: [12] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens, [`h${11 * H}.e0`, `h${13 * H}~12.e0`]);
    position.apply({ log: 'history', events: [event(12)], scannedTo: 13, gaps: [] }, (_e, token) => tokens.push(token()));
    assert.deepEqual(tokens.slice(2), [`h${last(13)}~12.e0`], 'a filled row is closed after it was given whole');
    assert.equal(position.token(), `h${last(13)}.e0`);
  });

  it('gives every event of a row of many, each with its own id and token', () => {
    const position = at(10, 0);
    const got: string[] = [];
    position.apply({ log: 'history', events: [event(11, 0), event(11, 1), event(11, 2)], scannedTo: 11, gaps: [] }, (e, token) => got.push(`${e.id}@${token()}`));
    assert.deepEqual(got, [0, 1, 2].map((pos) => `${11 * H + pos}@h${11 * H + pos}.e0`));
    // A client that resumes in the middle of the row gets the rest of it.
    const resumed = StreamPosition.parse(`h${11 * H}.e0`)!;
    const rest: number[] = [];
    resumed.apply({ log: 'history', events: [event(11, 0), event(11, 1), event(11, 2)], scannedTo: 11, gaps: [] }, (e) => rest.push(e.id));
    assert.deepEqual(rest, [11 * H + 1, 11 * H + 2]);
  });

  it('keeps the two logs apart: the same id in each is two events', () => {
    const position = at(5, 5);
    const got: string[] = [];
    position.apply({ log: 'events', events: [event(6, 0, 'events'), event(8, 0, 'events')], scannedTo: 8, gaps: [7] }, (e, token) => got.push(`${e.log}:${e.id}@${token()}`));
    position.apply({ log: 'history', events: [event(6)], scannedTo: 6, gaps: [] }, (e, token) => got.push(`${e.log}:${e.id}@${token()}`));
    assert.deepEqual(got, [`events:6@h${last(5)}.e6`, `events:8@h${last(5)}.e8~7`, `history:${6 * H}@h${6 * H}.e8~7`]);
  });

  it('parses its tokens and ignores garbage', () => {
    assert.equal(StreamPosition.parse('h42~0.e7~5')?.token(), 'h42~0.e7~5');
    assert.equal(StreamPosition.parse('h42.e7')?.token(), 'h42.e7');
    assert.equal(StreamPosition.parse('x'), null);
    assert.equal(StreamPosition.parse(''), null);
    assert.equal(StreamPosition.parse('h42.x7'), null);
    assert.equal(StreamPosition.parse('h42.e'), null);
    // Numbers past what an event id can be never reach the database (they would not fit a bigint).
    assert.equal(StreamPosition.parse('999999999999999999'), null, 'a legacy row number that overflows as an event id');
    assert.equal(StreamPosition.parse('h999999999999999999'), null);
    assert.equal(StreamPosition.parse('h42.e999999999999999999'), null);
  });

  it('reads a token of a server that numbered history by row (one event per row)', () => {
    const position = StreamPosition.parse('42~40,41.e7')!;
    assert.equal(position.logs.history?.token(), `${last(42)}~40,41`);
    assert.equal(position.logs.events?.token(), '7');
    assert.equal(StreamPosition.parse('42')!.logs.events, undefined, 'a token from before the event log resumes the history only');
  });

  it('skips events already given before a resume, delivers the missing ones, per log', () => {
    const position = StreamPosition.parse(`h${last(20)}~15.e3~2`)!;
    const got: string[] = [];
    position.apply({ log: 'history', events: [event(15), event(15, 1), event(18), event(21)], scannedTo: 21, gaps: [] }, (e) => got.push(`h${e.id}`));
    position.apply({ log: 'events', events: [event(2, 0, 'events'), event(3, 0, 'events'), event(4, 0, 'events')], scannedTo: 4, gaps: [] }, (e) => got.push(`e${e.id}`));
    assert.deepEqual(got, [`h${15 * H}`, `h${15 * H + 1}`, `h${21 * H}`, 'e2', 'e4']);
    assert.equal(position.token(), `h${last(21)}.e4`);
  });
});
