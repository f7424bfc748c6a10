/**
 * What a chart's axes and legend say, in the browser's zone and locale:
 * times of day on an hour's chart, times of day with the date at each
 * midnight on a day's, weekday and date on a week's, never a year; counts
 * with thousands separators; durations in ms, s, min and h. Pure functions
 * (no DOM), so that tests can run them under any zone and locale.
 */

/** How a time axis is labelled, from the span it shows. */
export type TimeScale = 'hour' | 'day' | 'week';

const HOUR = 3600;
const DAY = 86_400;

/** Up to 6 hours: times of day; up to 36 hours: times of day and the date at midnight; longer: days. */
export function timeScale(spanSeconds: number): TimeScale {
  return spanSeconds > 36 * HOUR ? 'week' : spanSeconds > 6 * HOUR ? 'day' : 'hour';
}

/** Tick intervals of a time axis, in seconds; a day's and longer fall on local midnights. */
const TIME_STEPS = [60, 120, 300, 600, 900, 1800, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY];

/** Fewest pixels between two time ticks, by scale: a week's labels ("Wed, Dec 3") are the widest. */
const TICK_SPACE: Record<TimeScale, number> = { hour: 56, day: 64, week: 84 };

/**
 * Tick positions (unix seconds) between `min` and `max` for an axis `widthPx`
 * wide: the smallest interval of TIME_STEPS that leaves room for the labels,
 * on the local clock (every 15 minutes at :00, :15, …; every 3 hours at 00:00,
 * 03:00, …; days at midnight), so that a day's chart has its midnight tick to
 * carry the date. Stepping by the local clock keeps the alignment across a
 * daylight-saving change.
 */
export function timeSplits(min: number, max: number, widthPx: number): number[] {
  if (!(max > min)) return [];
  const scale = timeScale(max - min);
  const room = Math.max(2, Math.floor(widthPx / TICK_SPACE[scale]));
  // A week's chart names days: never ticks between midnights.
  const steps = scale === 'week' ? TIME_STEPS.filter((s) => s >= DAY) : TIME_STEPS;
  const step = steps.find((s) => (max - min) / s <= room) ?? steps[steps.length - 1]!;
  const out: number[] = [];
  // A label is centred on its tick: one at the right edge (the window's end, often a round time) would be cut off.
  const last = max - (TICK_SPACE[scale] * 0.45 * (max - min)) / widthPx;
  if (step >= DAY) {
    const at = new Date(min * 1000);
    at.setHours(0, 0, 0, 0);
    if (at.getTime() < min * 1000) at.setDate(at.getDate() + 1);
    const days = step / DAY;
    // Every other day: even days of the month, so the ticks do not move as the window slides.
    if (days > 1 && at.getDate() % days !== 0) at.setDate(at.getDate() + 1);
    for (; at.getTime() <= last * 1000; at.setDate(at.getDate() + days)) out.push(at.getTime() / 1000);
    return out;
  }
  const everyMinutes = step / 60;
  // Whole minutes are whole minutes in every zone (offsets are whole minutes).
  for (let t = Math.ceil(min / 60) * 60; t <= last; t += 60) {
    const at = new Date(t * 1000);
    const minuteOfDay = at.getHours() * 60 + at.getMinutes();
    if (minuteOfDay % everyMinutes === 0) out.push(t);
  }
  return out;
}

export interface ChartLabels {
  /** Labels of time ticks (unix seconds) on an axis that spans `spanSeconds`. */
  timeAxis(splits: readonly number[], spanSeconds: number): string[];
  /** The legend's time of the point under the cursor. */
  legendTime(seconds: number, spanSeconds: number): string;
  /** A count: whole, with thousands separators (1,234,567). */
  count(value: number): string;
  /** A duration in milliseconds: 0.5 ms, 950 ms, 1.5 s, 2 min, 1 min 30 s, 3 h 5 min, 2 d 4 h. */
  duration(ms: number): string;
}

/** The labels in `locale` (default the browser's) and the process's or browser's time zone. */
export function chartLabels(locale?: string): ChartLabels {
  const hourMinute = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit' });
  const hourMinuteSecond = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const weekdayDate = new Intl.DateTimeFormat(locale, { weekday: 'short', day: 'numeric', month: 'short' });
  const weekdayTime = new Intl.DateTimeFormat(locale, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
  const weekdayDateTime = new Intl.DateTimeFormat(locale, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
  const whole = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
  const tenths = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 });
  const isMidnight = (at: Date) => at.getHours() === 0 && at.getMinutes() === 0;
  return {
    timeAxis(splits, spanSeconds) {
      const scale = timeScale(spanSeconds);
      // Within an hour or so after midnight the day's midnight tick sits at the right edge, where it is left
      // out (its label would be cut off), and the one before lies outside: then the first tick says the day.
      const dated = scale === 'day' && !splits.some((s) => isMidnight(new Date(s * 1000)));
      return splits.map((s, i) => {
        const at = new Date(s * 1000);
        if (scale === 'week') return weekdayDate.format(at);
        if (scale === 'day' && isMidnight(at)) return weekdayDate.format(at);
        if (dated && i === 0) return weekdayTime.format(at);
        return hourMinute.format(at);
      });
    },
    legendTime(seconds, spanSeconds) {
      const at = new Date(seconds * 1000);
      const scale = timeScale(spanSeconds);
      if (scale === 'week') return weekdayDateTime.format(at);
      // A day's chart holds two dates' worth of times of day: say which.
      if (scale === 'day') return weekdayTime.format(at);
      return spanSeconds > 3 * HOUR ? hourMinute.format(at) : hourMinuteSecond.format(at);
    },
    count(value) {
      return whole.format(Math.round(value));
    },
    duration(ms) {
      if (!Number.isFinite(ms)) return '—';
      if (ms < 10) return `${tenths.format(ms)} ms`;
      if (ms < 1000) return `${whole.format(ms)} ms`;
      const s = ms / 1000;
      if (s < 60) return `${tenths.format(s)} s`;
      const totalSeconds = Math.round(s);
      const m = Math.floor(totalSeconds / 60);
      if (m < 60) return totalSeconds % 60 === 0 ? `${m} min` : `${m} min ${totalSeconds % 60} s`;
      const totalMinutes = Math.round(s / 60);
      const h = Math.floor(totalMinutes / 60);
      if (h < 48) return totalMinutes % 60 === 0 ? `${h} h` : `${h} h ${totalMinutes % 60} min`;
      const d = Math.floor(h / 24);
      return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
    },
  };
}

/** The dashboard's chart text, in the browser's locale and zone. */
export const chartText = chartLabels();

/** Tick intervals of a count axis: whole numbers only. */
export const COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8];

/** Tick intervals of a duration axis in ms: ticks fall on 15 s, 1 min, 5 min, … rather than on 20,000 ms. */
export const DURATION_STEPS_MS = [
  0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500,
  1e3, 2e3, 5e3, 10e3, 15e3, 30e3,
  60e3, 2 * 60e3, 5 * 60e3, 10 * 60e3, 15 * 60e3, 30 * 60e3,
  3600e3, 2 * 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86_400e3,
];
