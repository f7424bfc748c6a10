import { isDeepStrictEqual } from 'node:util';

/**
 * Partial deep match: every key of an expected object must match in the
 * actual one (extra actual keys are fine); arrays match element by element
 * with equal length; everything else compares with deep strict equality.
 */
export function matches(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => matches(actual[i], item));
  }
  if (expected !== null && typeof expected === 'object' && !(expected instanceof Date)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(expected).every(([key, value]) => matches((actual as Record<string, unknown>)[key], value));
  }
  return isDeepStrictEqual(actual, expected);
}
