/**
 * The charts' axis and legend text (src/lib/chart-labels.ts), in a fixed zone and locale: what a
 * person reads on an hour's, a day's and a week's chart, counts and durations.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

// Before the module is loaded: Date and Intl read the zone when used, the module's formatters when made.
process.env.TZ = 'Europe/Berlin';
const { chartLabels, timeScale, timeSplits } = await import('../src/lib/chart-labels.js');

const at = (iso: string) => Date.parse(iso) / 1000;
const gb = chartLabels('en-GB');
const labelled = (from: string, to: string, width: number) => {
  const [min, max] = [at(from), at(to)];
  const splits = timeSplits(min, max, width);
  return { splits, labels: gb.timeAxis(splits, max - min) };
};

describe('chart labels', () => {
  it('an hour: times of day every 10 minutes on the local clock, no date even across midnight', () => {
    const { splits, labels } = labelled('2026-12-02T23:33:00+01:00', '2026-12-03T00:33:00+01:00', 600);
    assert.deepEqual(labels, ['23:40', '23:50', '00:00', '00:10', '00:20', '00:30']);
    assert.ok(splits.every((s) => s % 600 === 0));
    const wide = labelled('2026-12-03T10:00:00+01:00', '2026-12-03T11:00:00+01:00', 1200).labels;
    assert.deepEqual(wide, ['10:00', '10:05', '10:10', '10:15', '10:20', '10:25', '10:30', '10:35', '10:40', '10:45', '10:50', '10:55'], 'every 5 minutes when wide; none at the right edge, where its label would be cut off');
  });

  it('a day: times of day every 3 hours, and the date at midnight', () => {
    const { labels } = labelled('2026-12-02T11:00:00+01:00', '2026-12-03T11:00:00+01:00', 600);
    assert.deepEqual(labels, ['12:00', '15:00', '18:00', '21:00', 'Thu 3 Dec', '03:00', '06:00', '09:00']);
    const narrow = labelled('2026-12-02T11:00:00+01:00', '2026-12-03T11:00:00+01:00', 300).labels;
    assert.deepEqual(narrow, ['12:00', '18:00', 'Thu 3 Dec', '06:00'], 'every 6 hours on a narrow screen, still through midnight');
  });

  it('a day that ends just after midnight: the midnight tick would be cut off, so the first tick says the day', () => {
    const { labels } = labelled('2026-12-02T00:20:00+01:00', '2026-12-03T00:20:00+01:00', 300);
    assert.deepEqual(labels, ['Wed 06:00', '12:00', '18:00']);
  });

  it('a day across the end of summer time keeps to the local clock: 03:00 comes once, then 06:00', () => {
    // 25 October 2026, Berlin: 03:00 CEST becomes 02:00 CET; the day has 25 hours.
    const { labels } = labelled('2026-10-24T20:00:00+02:00', '2026-10-25T20:00:00+01:00', 600);
    assert.deepEqual(labels, ['21:00', 'Sun 25 Oct', '03:00', '06:00', '09:00', '12:00', '15:00', '18:00']);
  });

  it('a week: weekday and date at each local midnight, never a year or a time', () => {
    const { splits, labels } = labelled('2026-11-26T10:00:00+01:00', '2026-12-03T10:00:00+01:00', 700);
    assert.deepEqual(labels, ['Fri 27 Nov', 'Sat 28 Nov', 'Sun 29 Nov', 'Mon 30 Nov', 'Tue 1 Dec', 'Wed 2 Dec', 'Thu 3 Dec']);
    assert.ok(splits.every((s) => new Date(s * 1000).getHours() === 0 && new Date(s * 1000).getMinutes() === 0));
    const narrow = labelled('2026-11-26T10:00:00+01:00', '2026-12-03T10:00:00+01:00', 340).labels;
    assert.deepEqual(narrow, ['Sat 28 Nov', 'Mon 30 Nov', 'Wed 2 Dec'], 'every other day on a phone');
  });

  it('which scale a span is, and the legend time for each', () => {
    assert.deepEqual([3600, 6 * 3600, 6 * 3600 + 1, 86_400, 36 * 3600 + 1, 7 * 86_400].map(timeScale), ['hour', 'hour', 'day', 'day', 'week', 'week']);
    const t = at('2026-12-03T09:41:07+01:00');
    assert.equal(gb.legendTime(t, 3600), '09:41:07');
    assert.equal(gb.legendTime(t, 5 * 3600), '09:41');
    assert.equal(gb.legendTime(t, 86_400), 'Thu 09:41');
    assert.equal(gb.legendTime(t, 7 * 86_400), 'Thu 3 Dec, 09:41');
  });

  it('counts are whole, with the locale\'s thousands separators', () => {
    assert.equal(chartLabels('en-US').count(1_234_567), '1,234,567');
    assert.equal(chartLabels('de-DE').count(1_234_567), '1.234.567');
    assert.equal(gb.count(12.4), '12');
    assert.equal(gb.count(0), '0');
  });

  it('durations in ms, s, min, h and d, without a zero part', () => {
    const cases: [number, string][] = [
      [0, '0 ms'], [0.5, '0.5 ms'], [12.6, '13 ms'], [950, '950 ms'], [1000, '1 s'], [1500, '1.5 s'], [15_000, '15 s'],
      [59_940, '59.9 s'], [60_000, '1 min'], [90_000, '1 min 30 s'], [80_400, '1 min 20 s'], [3_600_000, '1 h'],
      [3 * 3_600_000 + 5 * 60_000, '3 h 5 min'], [52 * 3_600_000, '2 d 4 h'], [72 * 3_600_000, '3 d'],
    ];
    for (const [ms, text] of cases) assert.equal(gb.duration(ms), text, `${ms} ms`);
    assert.equal(chartLabels('de-DE').duration(1500), '1,5 s');
  });
});

describe('counts with their noun', () => {
  it('says one worker and one retry, and the plural otherwise', async () => {
    const { formatCountOf } = await import('../src/lib/format.js');
    assert.equal(formatCountOf(1, 'worker'), '1 worker');
    assert.equal(formatCountOf(0, 'worker'), '0 workers');
    assert.equal(formatCountOf(1, 'retry', 'retries'), '1 retry');
    assert.equal(formatCountOf(3, 'retry', 'retries'), '3 retries');
    assert.equal(formatCountOf(null, 'worker'), '— workers');
  });
});
