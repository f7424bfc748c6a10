import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '@spool/protocol';
import { cronNext, cronNextN, normalizeCron, parseTimeZone, planFiring, validateSchedule } from '@spool/engine';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

function rejects(fn: () => unknown, field: string, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ValidationError, `expected a ValidationError, got ${String(err)}`);
    assert.equal(err.details?.field, field);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('cron grammar (docs/compatibility.md §3.9)', () => {
  it('accepts the contract forms in every field', () => {
    for (const expr of ['* * * * * *', '*/5 * * * * *', '0 0 9-17 * * 1-5', '0,15,30,45 * * * * *', '30 2 * 1,6,12 * 0', '0 0 0 1 1 *', '59 59 23 31 12 6', '0 0 0-23/2 * * *', '0 5,10-20 * * * *']) {
      assert.equal(normalizeCron(expr), expr, expr);
    }
  });

  it('accepts 5 fields by prefixing second 0 (extension), and tolerates extra blanks', () => {
    assert.equal(normalizeCron('*/5 * * * *'), '0 */5 * * * *');
    assert.equal(normalizeCron('  0  12 * * 1 '), '0 0 12 * * 1');
  });

  it('rejects everything outside the grammar with a message naming cron_expression', () => {
    const cases: [string, RegExp][] = [
      ['', /6 space-separated fields/],
      ['* * * *', /got 4/],
      ['* * * * * * *', /got 7/],
      ['60 * * * * *', /second.*60 is outside 0-59/],
      ['* 60 * * * *', /minute/],
      ['* * 24 * * *', /hour.*outside 0-23/],
      ['* * * 0 * *', /day-of-month.*outside 1-31/],
      ['* * * 32 * *', /day-of-month/],
      ['* * * * 13 *', /month.*outside 1-12/],
      ['* * * * 0 *', /month/],
      ['* * * * * 7', /day-of-week.*outside 0-6/],
      ['*/0 * * * * *', /step "0"/],
      ['*/61 * * * * *', /step/],
      ['5-1 * * * * *', /runs backwards/],
      ['* * * * JAN *', /not a number/],
      ['* * * * * MON', /not a number/],
      ['* * * ? * *', /not a number/],
      ['* * * L * *', /not a number/],
      ['* * * * * 1#2', /not a number/],
      ['5/10 * * * * *', /a step needs/],
      ['*,5 * * * * *', /cannot be part of a list/],
      ['1,,2 * * * * *', /not valid/],
      ['-1 * * * * *', /not a number/],
      ['1-2-3 * * * * *', /not a valid range/],
    ];
    for (const [expr, pattern] of cases) rejects(() => normalizeCron(expr), 'cron_expression', pattern);
  });

  it('rejects an expression that never fires', () => {
    rejects(() => validateSchedule('0 0 0 31 2 *', 'UTC'), 'cron_expression', /never fires/);
    assert.doesNotThrow(() => validateSchedule('0 0 0 29 2 *', 'UTC'));
  });

  it('matches a day when either restricted day field matches (Vixie cron)', () => {
    // 1st of the month OR Monday, June 2026 (1 June is a Monday; 8, 15, 22, 29 are Mondays; 1 July a Wednesday)
    const runs = cronNextN('0 0 0 1 * 1', 'UTC', new Date('2026-06-01T00:00:00Z'), 5);
    assert.deepEqual(iso(runs), ['2026-06-08T00:00:00.000Z', '2026-06-15T00:00:00.000Z', '2026-06-22T00:00:00.000Z', '2026-06-29T00:00:00.000Z', '2026-07-01T00:00:00.000Z']);
  });
});

describe('time zones', () => {
  it('accepts IANA names and ±HH:MM offsets, and refuses unknown zones naming timezone', () => {
    for (const tz of ['UTC', 'Europe/Kyiv', 'Europe/Kiev', 'America/New_York', 'Etc/GMT+5', 'Asia/Kolkata']) assert.equal(parseTimeZone(tz).kind, 'iana', tz);
    assert.deepEqual(parseTimeZone('+05:30'), { kind: 'offset', minutes: 330 });
    assert.deepEqual(parseTimeZone('-03:00'), { kind: 'offset', minutes: -180 });
    for (const tz of ['Mars/Olympus', 'Europe/Kyivv', '', '+15:00', '+05:60', 'GMT+25']) rejects(() => parseTimeZone(tz), 'timezone', /timezone/);
  });

  it('computes fire times in the zone', () => {
    assert.equal(cronNext('0 0 12 * * *', 'Asia/Kolkata', new Date('2026-01-01T00:00:00Z'))!.toISOString(), '2026-01-01T06:30:00.000Z');
    assert.equal(cronNext('0 0 12 * * *', '+05:30', new Date('2026-01-01T00:00:00Z'))!.toISOString(), '2026-01-01T06:30:00.000Z');
    assert.equal(cronNext('0 0 12 * * *', 'America/New_York', new Date('2026-07-01T00:00:00Z'))!.toISOString(), '2026-07-01T16:00:00.000Z');
  });
});

describe('daylight saving (docs/scheduler.md)', () => {
  it('America/New_York 02:30 daily: on spring-forward day (02:00→03:00) it fires once at 03:00 EDT; on fall-back day once at 02:30 EST', () => {
    assert.deepEqual(iso(cronNextN('0 30 2 * * *', 'America/New_York', new Date('2026-03-06T12:00:00Z'), 3)), [
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // 02:30 does not exist: 03:00 EDT, the first valid time after the gap
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
    assert.deepEqual(iso(cronNextN('0 30 2 * * *', 'America/New_York', new Date('2026-10-30T12:00:00Z'), 3)), [
      '2026-10-31T06:30:00.000Z', // 02:30 EDT
      '2026-11-01T07:30:00.000Z', // 02:30 EST: 02:30 happens once (01:00-01:59 is the repeated hour)
      '2026-11-02T07:30:00.000Z',
    ]);
  });

  it('America/New_York 01:30 daily on fall-back day fires once, at the first 01:30 (EDT)', () => {
    assert.deepEqual(iso(cronNextN('0 30 1 * * *', 'America/New_York', new Date('2026-10-31T12:00:00Z'), 2)), [
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) is skipped
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('Europe/Kyiv 02:30 daily is untouched by both transitions (they happen at 03:00 and 04:00 local)', () => {
    assert.deepEqual(iso(cronNextN('0 30 2 * * *', 'Europe/Kyiv', new Date('2026-03-27T12:00:00Z'), 3)), [
      '2026-03-28T00:30:00.000Z', // 02:30 EET (+2)
      '2026-03-29T00:30:00.000Z', // spring-forward day: 02:30 EET still exists
      '2026-03-29T23:30:00.000Z', // 30 March 02:30 EEST (+3)
    ]);
    assert.deepEqual(iso(cronNextN('0 30 2 * * *', 'Europe/Kyiv', new Date('2026-10-23T12:00:00Z'), 3)), [
      '2026-10-23T23:30:00.000Z', // 24 Oct 02:30 EEST
      '2026-10-24T23:30:00.000Z', // fall-back day: 02:30 EEST, once
      '2026-10-26T00:30:00.000Z', // 26 Oct 02:30 EET
    ]);
  });

  it('Europe/Kyiv 03:30 daily: skipped hour → 04:00 EEST; repeated hour → once, at the first 03:30 (EEST)', () => {
    assert.deepEqual(iso(cronNextN('0 30 3 * * *', 'Europe/Kyiv', new Date('2026-03-28T12:00:00Z'), 2)), ['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    assert.deepEqual(iso(cronNextN('0 30 3 * * *', 'Europe/Kyiv', new Date('2026-10-24T12:00:00Z'), 2)), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  it('interval schedules skip the missing hour and run through the repeated hour twice', () => {
    assert.deepEqual(iso(cronNextN('0 */30 * * * *', 'America/New_York', new Date('2026-03-08T06:00:00Z'), 3)), [
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:00 and 02:30 do not exist)
      '2026-03-08T07:30:00.000Z',
    ]);
    assert.deepEqual(iso(cronNextN('0 */30 * * * *', 'America/New_York', new Date('2026-11-01T04:45:00Z'), 4)), [
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T06:00:00.000Z', // 01:00 EST
      '2026-11-01T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('the firer plan fires the spring-forward tick exactly once, and each repeated-hour tick once', () => {
    const plan = planFiring({ cronExpression: '0 30 2 * * *', timezone: 'America/New_York', nextRunAt: new Date('2026-03-08T07:00:00Z'), now: new Date('2026-03-08T07:00:00.040Z'), policy: 'once', misfireThresholdMs: 60_000, missedCap: 100 });
    assert.deepEqual(iso(plan.fireTimes), ['2026-03-08T07:00:00.000Z']);
    assert.equal(plan.nextRunAt!.toISOString(), '2026-03-09T06:30:00.000Z');
    const late = planFiring({ cronExpression: '0 */30 * * * *', timezone: 'America/New_York', nextRunAt: new Date('2026-11-01T05:30:00Z'), now: new Date('2026-11-01T06:00:30Z'), policy: 'skip', misfireThresholdMs: 3_600_000, missedCap: 100 });
    assert.deepEqual(iso(late.fireTimes), ['2026-11-01T05:30:00.000Z', '2026-11-01T06:00:00.000Z']);
  });
});

describe('planFiring: missed-fire policy', () => {
  const base = { cronExpression: '0 0 * * * *', timezone: 'UTC', misfireThresholdMs: 60_000, missedCap: 3 } as const;
  const now = new Date('2026-05-01T10:00:20Z');
  const downSince = new Date('2026-05-01T04:00:00Z'); // ticks 04:00 ... 10:00 were due: 10:00 is 20 s late, the rest missed

  it('fires nothing early', () => {
    const plan = planFiring({ ...base, policy: 'once', nextRunAt: new Date('2026-05-01T11:00:00Z'), now });
    assert.deepEqual(plan.fireTimes, []);
    assert.equal(plan.nextRunAt!.toISOString(), '2026-05-01T11:00:00.000Z');
  });

  it('a tick late by less than the threshold always fires', () => {
    for (const policy of ['skip', 'once', 'all'] as const) {
      const plan = planFiring({ ...base, policy, nextRunAt: new Date('2026-05-01T10:00:00Z'), now });
      assert.deepEqual(iso(plan.fireTimes), ['2026-05-01T10:00:00.000Z'], policy);
      assert.equal(plan.skipped, 0);
      assert.equal(plan.nextRunAt!.toISOString(), '2026-05-01T11:00:00.000Z');
    }
  });

  it('skip drops every missed tick', () => {
    const plan = planFiring({ ...base, policy: 'skip', nextRunAt: downSince, now });
    assert.deepEqual(iso(plan.fireTimes), ['2026-05-01T10:00:00.000Z']);
    assert.equal(plan.skipped, 6);
    assert.equal(plan.nextRunAt!.toISOString(), '2026-05-01T11:00:00.000Z');
  });

  it('once collapses the missed ticks into one run for the newest', () => {
    const plan = planFiring({ ...base, policy: 'once', nextRunAt: downSince, now });
    assert.deepEqual(iso(plan.fireTimes), ['2026-05-01T09:00:00.000Z', '2026-05-01T10:00:00.000Z']);
  });

  it('all fires each missed tick up to the cap (the newest), oldest first', () => {
    const plan = planFiring({ ...base, policy: 'all', nextRunAt: downSince, now });
    assert.deepEqual(iso(plan.fireTimes), ['2026-05-01T07:00:00.000Z', '2026-05-01T08:00:00.000Z', '2026-05-01T09:00:00.000Z', '2026-05-01T10:00:00.000Z']);
    assert.equal(plan.skipped, 3);
    const uncapped = planFiring({ ...base, missedCap: 100, policy: 'all', nextRunAt: downSince, now });
    assert.equal(uncapped.fireTimes.length, 7);
    assert.equal(uncapped.skipped, 0);
  });

  it('fires every late per-second tick within the threshold, none twice', () => {
    const plan = planFiring({ ...base, cronExpression: '* * * * * *', policy: 'skip', nextRunAt: new Date('2026-05-01T10:00:10Z'), now: new Date('2026-05-01T10:00:14.300Z') });
    assert.deepEqual(iso(plan.fireTimes), ['10', '11', '12', '13', '14'].map((s) => `2026-05-01T10:00:${s}.000Z`));
    assert.equal(plan.nextRunAt!.toISOString(), '2026-05-01T10:00:15.000Z');
  });
});
