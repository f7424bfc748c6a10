import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUuid, uuidv7 } from '../src/ids.js';

describe('uuidv7', () => {
  it('is an RFC 9562 version 7 UUID whose first 48 bits are the Unix milliseconds', () => {
    const now = Date.UTC(2026, 10, 29, 16, 30, 0, 123);
    const id = uuidv7(now);
    assert.ok(isUuid(id), id);
    assert.equal(id[14], '7', 'version nibble');
    assert.match(id[19]!, /[89ab]/, 'variant bits 10');
    assert.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), now);
  });

  it('sorts by creation time across milliseconds and does not repeat', () => {
    const ids = Array.from({ length: 50_000 }, (_, i) => uuidv7(1_700_000_000_000 + Math.floor(i / 100)));
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 100; i < ids.length; i += 100) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`);
  });
});
