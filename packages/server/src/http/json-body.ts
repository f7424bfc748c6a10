import type { FastifyInstance } from 'fastify';
import { LIMITS, ValidationError } from '@spool/protocol';

/**
 * True when `text` (JSON) nests arrays/objects deeper than `max`. A scan of
 * the text, before parsing: a 10,000-level body parses fine but overflows
 * the stack later (JSON.stringify of the payload, PostgreSQL's jsonb input),
 * which would be a 500 far from the cause.
 */
export function jsonNestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * True when `text` holds a number literal JSON.parse may read as Infinity:
 * one with an exponent, or with more digits in a row than the largest
 * double has (309). Such a value would be stored as null (JSON.stringify
 * writes Infinity as null), so the parsed body is then searched for it; a
 * body without such a literal is not walked twice.
 */
export function jsonMayOverflow(text: string): boolean {
  let inString = false;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c >= 0x30 && c <= 0x39) {
      if (++digits > 308) return true;
      continue;
    }
    // An e after a digit or a '.' (1e5, 1.e5) is an exponent; `true`/`false` have theirs after a letter.
    if ((c === 0x65 || c === 0x45) && (digits > 0 || text.charCodeAt(i - 1) === 0x2e)) return true;
    if (c !== 0x2e) digits = 0;
  }
  return false;
}

/**
 * The path (`payload.a[2]`) of the first number in `value` that is not
 * finite, or null. JSON cannot carry NaN or Infinity, so such a number was
 * a literal too large for a double.
 */
export function nonFiniteNumberPath(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (value === null || typeof value !== 'object' || depth > LIMITS.jsonDepthMax) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nonFiniteNumberPath(value[i], `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const found = nonFiniteNumberPath(item, path ? `${path}.${key}` : key, depth + 1);
    if (found) return found;
  }
  return null;
}

/** The 400 for a number that does not fit a double (it would be stored as null). */
export function nonFiniteNumberError(field: string): ValidationError {
  return new ValidationError(
    `${field} is a number too large to store (it reads as Infinity and would be saved as null); send it as a string, or a smaller number`,
    { field },
  );
}

/** Refuses a parsed body (from `text`) holding a number that overflowed to Infinity. */
export function assertFiniteNumbers(text: string, value: unknown): void {
  if (!jsonMayOverflow(text)) return;
  const path = nonFiniteNumberPath(value, '');
  if (path !== null) throw nonFiniteNumberError(path === '' ? 'body' : path);
}

/** The 400 for a body nested too deeply. */
export function tooDeepError(field = 'body'): ValidationError {
  return new ValidationError(`${field} is nested more than ${LIMITS.jsonDepthMax} levels deep`, { field });
}

/**
 * Clients (the Spooled SDK) send `Content-Type: application/json` on every
 * request, including body-less POSTs and DELETEs: an empty body is `{}`
 * (docs/compatibility.md §1.2). Everything else goes through Fastify's own parser, which
 * refuses prototype poisoning, after the nesting check; numbers that
 * overflow a double are refused rather than stored as null.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, {});
      return;
    }
    if (jsonNestedDeeperThan(text, LIMITS.jsonDepthMax)) {
      done(tooDeepError(), undefined);
      return;
    }
    parseJson(request, text, (err: Error | null, parsed?: unknown) => {
      if (err) {
        done(err, undefined);
        return;
      }
      try {
        assertFiniteNumbers(text, parsed);
      } catch (refusal) {
        done(refusal as Error, undefined);
        return;
      }
      done(null, parsed);
    });
  });
}
