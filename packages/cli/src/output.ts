/** Terminal output: aligned tables for people, snake_case JSON (the API's wire shape) for scripts. */
import { toWire } from '@spool/sdk';

export type Cell = string | number | boolean | null | undefined;

export interface Column<T> {
  header: string;
  value(row: T): Cell;
  /** Right-align (numbers). */
  right?: boolean;
}

/** `2026-07-19T10:47:13.123Z` → `2026-07-19 10:47:13`; anything else unchanged. */
export function shortTime(value: Cell): string {
  if (typeof value !== 'string') return value === null || value === undefined ? '-' : String(value);
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(value);
  return match ? `${match[1]} ${match[2]}` : value;
}

function text(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value);
}

/** Renders rows as an aligned table with a header line; an empty list renders as `emptyText`. */
export function table<T>(rows: readonly T[], columns: Column<T>[], emptyText = 'Nothing to show.'): string {
  if (rows.length === 0) return emptyText;
  const cells = rows.map((row) => columns.map((column) => text(column.value(row)).replace(/\s+/g, ' ')));
  const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((line) => line[i]!.length)));
  const render = (line: string[]) =>
    line
      .map((cell, i) => (columns[i]!.right ? cell.padStart(widths[i]!) : i === line.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [render(columns.map((column) => column.header)), ...cells.map(render)].join('\n');
}

/** Key/value lines for one object, under the API's snake_case keys (nested values as compact JSON, user blobs untouched). */
export function details(record: object): string {
  const entries = Object.entries(toWire(record) as Record<string, unknown>);
  if (entries.length === 0) return '';
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries
    .map(([key, value]) => {
      const shown = value !== null && typeof value === 'object' ? JSON.stringify(value) : key.endsWith('_at') ? shortTime(value as Cell) : text(value as Cell);
      return `${key.padEnd(width)}  ${shown}`;
    })
    .join('\n');
}

/** Pretty JSON in the wire's snake_case (user blobs untouched). */
export function json(value: unknown): string {
  return JSON.stringify(toWire(value), null, 2);
}

/** A one-line progress bar redrawn on stderr; silent when stderr is not a terminal. */
export class Progress {
  readonly #total: number | null;
  readonly #enabled: boolean;
  readonly #started = Date.now();
  #lastDraw = 0;

  constructor(total: number | null, enabled = Boolean(process.stderr.isTTY)) {
    this.#total = total;
    this.#enabled = enabled;
  }

  /** Whether anything is drawn (stderr is a terminal, or --progress). */
  get enabled(): boolean {
    return this.#enabled;
  }

  update(done: number, force = false): void {
    if (!this.#enabled) return;
    const now = Date.now();
    if (!force && now - this.#lastDraw < 100) return;
    this.#lastDraw = now;
    const rate = Math.round(done / Math.max(0.001, (now - this.#started) / 1000));
    let line = `${done.toLocaleString('en-US')} jobs  ${rate.toLocaleString('en-US')}/s`;
    if (this.#total) {
      const fraction = Math.min(1, done / this.#total);
      const width = 30;
      const filled = Math.round(fraction * width);
      line = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor(fraction * 100)}%  ${done.toLocaleString('en-US')}/${this.#total.toLocaleString('en-US')}  ${rate.toLocaleString('en-US')}/s`;
    }
    process.stderr.write(`\r\x1b[2K${line}`);
  }

  finish(done: number): void {
    if (!this.#enabled) return;
    this.update(done, true);
    process.stderr.write('\n');
  }
}
