/** Display helpers: numbers, durations, times. All times are shown in the browser's zone. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export function formatCount(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : integer.format(value);
}

/** "1 worker", "3 workers", "1,200 jobs": a count and its noun, singular for one. */
export function formatCountOf(value: number | null | undefined, singular: string, plural = `${singular}s`): string {
  return `${formatCount(value)} ${value === 1 ? singular : plural}`;
}

export function formatPercent(value: number | null): string {
  return value === null ? '—' : `${decimal.format(value * 100)} %`;
}

/** 950 ms, 12.3 s, 4 min 10 s, 5 min, 3 h 5 min, 2 d 4 h */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${integer.format(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${decimal.format(s)} s`;
  // Without a zero part: "1 min", not "1 min 0 s" (as the charts write them, lib/chart-labels.ts).
  const m = Math.floor(s / 60);
  if (m < 60) return Math.floor(s % 60) === 0 ? `${m} min` : `${m} min ${Math.floor(s % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
  return h % 24 === 0 ? `${Math.floor(h / 24)} d` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function formatSeconds(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? '—' : formatDuration(seconds * 1000);
}

const dateTime = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

/** The same instant written in another IANA zone (schedule previews). */
export function formatInZone(iso: string, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, { timeZone, weekday: 'short', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' }).format(new Date(iso));
  } catch {
    return formatTime(iso);
  }
}

/** "12 s ago", "in 3 min" */
export function formatRelative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = t - now;
  const text = formatDuration(Math.abs(diff) < 1000 ? 0 : Math.round(Math.abs(diff) / 1000) * 1000);
  if (Math.abs(diff) < 1000) return 'just now';
  return diff < 0 ? `${text} ago` : `in ${text}`;
}

/** The last 8 characters: Spool's ids are UUIDv7, whose first characters are a timestamp shared by neighbours. */
export function shortId(id: string | null | undefined): string {
  return id ? id.slice(-8) : '—';
}

export function prettyJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, null, 2);
}
