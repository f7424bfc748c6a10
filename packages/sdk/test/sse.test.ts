import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSse, type SseMessage } from '../src/sse.js';

async function parse(chunks: string[]): Promise<SseMessage[]> {
  const encoder = new TextEncoder();
  async function* body() {
    for (const chunk of chunks) yield encoder.encode(chunk);
  }
  const out: SseMessage[] = [];
  for await (const message of readSse(body())) out.push(message);
  return out;
}

test('events end at a blank line; data lines join; comments and unknown fields are ignored', async () => {
  const messages = await parse([': connected\n\n', 'data: {"a":1}\n\n', 'retry: 10\ndata: one\ndata:two\nfoo: bar\n\n', ': ping\n\n']);
  assert.deepEqual(messages, [
    { event: 'message', data: '{"a":1}', lastEventId: undefined },
    { event: 'message', data: 'one\ntwo', lastEventId: undefined },
  ]);
});

test('the last event id carries over to later events, and event names are kept', async () => {
  const messages = await parse(['id: 7\ndata: a\n\n', 'data: b\n\n', 'event: custom\nid: 9~3\ndata: c\n\n']);
  assert.deepEqual(messages.map((m) => [m.event, m.data, m.lastEventId]), [
    ['message', 'a', '7'],
    ['message', 'b', '7'],
    ['custom', 'c', '9~3'],
  ]);
});

test('chunk boundaries anywhere, CRLF and CR line ends, multi-byte characters split across chunks', async () => {
  const text = 'id: 1\r\ndata: héllo ✓\r\n\r\ndata: x\rdata: y\r\r';
  const bytes = new TextEncoder().encode(text);
  for (let cut = 1; cut < bytes.length; cut++) {
    async function* body() {
      yield bytes.slice(0, cut);
      yield bytes.slice(cut);
    }
    const messages: SseMessage[] = [];
    for await (const message of readSse(body())) messages.push(message);
    assert.deepEqual(messages.map((m) => m.data), ['héllo ✓', 'x\ny'], `cut at byte ${cut}`);
    assert.equal(messages[1]!.lastEventId, '1');
  }
});

test('a CRLF split between chunks is one line end, not two', async () => {
  const messages = await parse(['data: a\r', '\ndata: b\r\n\r\n']);
  assert.deepEqual(messages.map((m) => m.data), ['a\nb']);
});

test('an event cut off by the end of the stream is dropped', async () => {
  assert.deepEqual(await parse(['data: complete\n\ndata: partial\n']), [{ event: 'message', data: 'complete', lastEventId: undefined }]);
});
