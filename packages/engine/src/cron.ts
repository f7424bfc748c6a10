import { Cron } from 'croner';
import { ValidationError } from '@spool/protocol';

/**
 * Cron expressions (docs/compatibility.md §3.9): six space-separated fields
 * `second minute hour day-of-month month day-of-week`, each a star, a star
 * with a step ("every n"), a number, a range `a-b` (optionally with a step),
 * or a comma list of numbers and ranges. No names,
 * `?`, `L` or `#`. Day-of-week is 0-6 with Sunday = 0. When both day fields
 * are restricted a day matches if either matches (Vixie cron). A 5-field
 * expression is accepted as an extension by prefixing second 0.
 * Next-fire computation (time zones, daylight saving) is croner's; see
 * docs/scheduler.md for what it does on transition days.
 */

interface FieldSpec {
  name: string;
  min: number;
  max: number;
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day-of-week', min: 0, max: 6 },
];

const NUMBER = /^\d{1,2}$/;

function invalid(message: string, field = 'cron_expression'): ValidationError {
  return new ValidationError(`${field} ${message}`, { field });
}

function checkNumber(text: string, spec: FieldSpec, position: number): number {
  if (!NUMBER.test(text)) throw invalid(`field ${position} (${spec.name}): "${text}" is not a number`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) throw invalid(`field ${position} (${spec.name}): ${value} is outside ${spec.min}-${spec.max}`);
  return value;
}

function checkStep(text: string, spec: FieldSpec, position: number): void {
  if (!/^\d{1,2}$/.test(text) || Number(text) < 1 || Number(text) > spec.max - spec.min + 1) {
    throw invalid(`field ${position} (${spec.name}): step "${text}" must be an integer from 1 to ${spec.max - spec.min + 1}`);
  }
}

function checkItem(item: string, spec: FieldSpec, position: number, inList: boolean): void {
  const [base, step, extra] = item.split('/');
  if (extra !== undefined || base === undefined || base === '') throw invalid(`field ${position} (${spec.name}): "${item}" is not valid`);
  if (step !== undefined) checkStep(step, spec, position);
  if (base === '*') {
    if (inList) throw invalid(`field ${position} (${spec.name}): "*" cannot be part of a list`);
    return;
  }
  const range = base.split('-');
  if (range.length === 1) {
    checkNumber(range[0]!, spec, position);
    if (step !== undefined) throw invalid(`field ${position} (${spec.name}): a step needs "*" or a range before it ("${item}")`);
    return;
  }
  if (range.length !== 2) throw invalid(`field ${position} (${spec.name}): "${item}" is not a valid range`);
  const low = checkNumber(range[0]!, spec, position);
  const high = checkNumber(range[1]!, spec, position);
  if (low > high) throw invalid(`field ${position} (${spec.name}): range "${base}" runs backwards`);
}

/**
 * Checks an expression against the grammar above and returns its 6-field
 * form (5 fields get second 0). Throws a ValidationError naming the field
 * and what is wrong. The stored expression stays exactly as submitted.
 */
export function normalizeCron(expression: unknown): string {
  if (typeof expression !== 'string') throw invalid('must be a string');
  const parts = expression.trim().split(/\s+/).filter((p) => p !== '');
  if (parts.length === 5) parts.unshift('0');
  if (parts.length !== 6) {
    throw invalid(`must have 6 space-separated fields (second minute hour day-of-month month day-of-week); got ${parts.length}`);
  }
  parts.forEach((part, index) => {
    const spec = FIELDS[index]!;
    const items = part.split(',');
    for (const item of items) checkItem(item, spec, index + 1, items.length > 1);
  });
  return parts.join(' ');
}

const UTC_OFFSET = /^([+-])(\d{2}):(\d{2})$/;

/** A validated time zone: an IANA name, or (extension, as the Spooled backend) a fixed `±HH:MM` offset. */
export type TimeZone = { kind: 'iana'; name: string } | { kind: 'offset'; minutes: number };

/** Validates a time zone string; throws a ValidationError naming `timezone`. */
export function parseTimeZone(value: unknown, field = 'timezone'): TimeZone {
  if (typeof value !== 'string' || value.length === 0 || value.length > 64) throw invalid('must be an IANA time zone name such as "Europe/Kyiv" or "UTC"', field);
  const offset = UTC_OFFSET.exec(value);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3]);
    if (Number(offset[3]) > 59 || minutes > 14 * 60) throw invalid(`offset "${value}" is out of range (-14:00 to +14:00)`, field);
    return { kind: 'offset', minutes: offset[1] === '-' ? -minutes : minutes };
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch {
    throw invalid(`"${value}" is not a known IANA time zone`, field);
  }
  return { kind: 'iana', name: value };
}

const CACHE_LIMIT = 2000;
const compiled = new Map<string, Cron>();

/** A parsed croner pattern for (expression, zone), cached: parsing costs ~0.2 ms and the firer asks often. */
function compile(expression: string, timezone: string): Cron {
  const key = `${expression}\u0000${timezone}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const normalized = normalizeCron(expression);
  const zone = parseTimeZone(timezone);
  let cron: Cron;
  try {
    cron = new Cron(normalized, {
      paused: true,
      mode: '6-part',
      ...(zone.kind === 'iana' ? { timezone: zone.name } : { utcOffset: zone.minutes }),
    });
  } catch (err) {
    throw invalid(`is not valid: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value!);
  compiled.set(key, cron);
  return cron;
}

/**
 * Validates an expression and zone together, including that the expression
 * ever fires (`0 0 0 31 2 *` does not). Throws a ValidationError naming
 * the field.
 */
export function validateSchedule(expression: unknown, timezone: unknown): void {
  parseTimeZone(timezone);
  normalizeCron(expression);
  if (cronNext(expression as string, timezone as string, new Date()) === null) throw invalid('never fires');
}

/** The first fire time strictly after `after`, or null if there is none. */
export function cronNext(expression: string, timezone: string, after: Date): Date | null {
  return compile(expression, timezone).nextRun(after);
}

/** The next `count` fire times strictly after `after`, ascending. */
export function cronNextN(expression: string, timezone: string, after: Date, count: number): Date[] {
  return compile(expression, timezone).nextRuns(count, after);
}

/** Up to `count` fire times strictly before `before`, newest first. */
export function cronPrevious(expression: string, timezone: string, before: Date, count: number): Date[] {
  return compile(expression, timezone).previousRuns(count, before);
}
