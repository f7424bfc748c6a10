import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HistoryCursor } from '@spool/engine';

describe('HistoryCursor', () => {
  it('remembers skipped ids and returns them when they commit late', () => {
    const cursor = new HistoryCursor({ scannedTo: 10, gaps: [] });
    assert.deepEqual(cursor.advance([11, 13, 14], 100n, 105n), [11, 13, 14]);
    assert.deepEqual(cursor.gapIds(), [12]);
    assert.equal(cursor.watermark, 11);
    assert.equal(cursor.scannedTo, 14);
    assert.deepEqual(cursor.advance([12, 15], 101n, 106n), [12, 15]);
    assert.deepEqual(cursor.gapIds(), []);
    assert.equal(cursor.watermark, 15);
  });

  it('settles a gap once every transaction older than its horizon has ended', () => {
    const cursor = new HistoryCursor({ scannedTo: 0, gaps: [] });
    cursor.advance([2], 100n, 105n);
    cursor.advance([], 104n, 106n);
    assert.deepEqual(cursor.gapIds(), [1], 'xmin 104 < horizon 105: the owner may still commit');
    cursor.advance([], 105n, 107n);
    assert.deepEqual(cursor.gapIds(), [], 'xmin reached the horizon: the id will never appear');
  });

  it('drops gaps older than maxGapAgeMs and keeps at most maxGaps', () => {
    const cursor = new HistoryCursor({ scannedTo: 0, gaps: [] }, { maxGapAgeMs: 1000, maxGaps: 3 });
    cursor.advance([10], 1n, 5n, 0);
    assert.deepEqual(cursor.gapIds(), [7, 8, 9]);
    cursor.advance([], 1n, 5n, 2000);
    assert.deepEqual(cursor.gapIds(), []);
  });

  it('round-trips its state (the webhook dispatcher persists it)', () => {
    const cursor = new HistoryCursor({ scannedTo: 0, gaps: [] });
    cursor.advance([1, 3], 10n, 12n, 5);
    const copy = new HistoryCursor(JSON.parse(JSON.stringify(cursor.toState())));
    assert.deepEqual(copy.gapIds(), [2]);
    assert.deepEqual(copy.advance([2], 11n, 13n, 6), [2]);
  });
});
