/**
 * What every example shares: a client built from SPOOL_URL and SPOOL_API_KEY,
 * clear messages when they are missing or wrong, a deadline so an example
 * never hangs, and `check()` for the outcome each example expects.
 * Exit codes: 0 the scenario went as expected, 1 it did not (or Spool could
 * not be reached), 2 the environment is missing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AuthenticationError, SpoolClient, SpoolNetworkError, SpoolTimeoutError } from '@spool/sdk';

const DEFAULT_URL = 'http://localhost:8080';

/** A failed expectation: the scenario did not go as the example says it should. */
class ScenarioError extends Error {}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ScenarioError(message);
}

/** The client for the server named by the environment; exits with a message when the key is missing. */
export function clientFromEnv(): SpoolClient {
  const apiKey = process.env.SPOOL_API_KEY;
  if (!apiKey) {
    console.error(
      [
        'SPOOL_API_KEY is not set.',
        'Start Spool with `npm start`: on its first start it prints a development API key once',
        '("Spool created a development organization ..."). Then run, for example:',
        '',
        '  SPOOL_API_KEY=sk_test_... npx tsx examples/enqueue-and-process.ts',
        '',
        'Lost the key? See examples/README.md for how to get another one.',
      ].join('\n'),
    );
    process.exit(2);
  }
  const baseUrl = process.env.SPOOL_URL || DEFAULT_URL;
  if (!process.env.SPOOL_URL) console.log(`SPOOL_URL is not set: using ${DEFAULT_URL}`);
  return new SpoolClient({ baseUrl, apiKey });
}

/**
 * Runs one example: connects, checks the key with one cheap call, runs the
 * scenario and sets the exit code. `deadlineMs` bounds the whole run.
 */
export async function runExample(title: string, scenario: (spool: SpoolClient) => Promise<void>, deadlineMs = 45_000): Promise<void> {
  const spool = clientFromEnv();
  const deadline = setTimeout(() => {
    console.error(`FAILED: ${title} did not finish within ${deadlineMs / 1000} s`);
    process.exit(1);
  }, deadlineMs);
  deadline.unref();
  console.log(`== ${title} (Spool at ${spool.baseUrl})`);
  try {
    await spool.jobs.stats();
    await scenario(spool);
    console.log(`OK: ${title}`);
    process.exitCode = 0;
  } catch (err) {
    console.error(`FAILED: ${explain(err, spool.baseUrl)}`);
    process.exitCode = 1;
  } finally {
    clearTimeout(deadline);
  }
}

function explain(err: unknown, url: string): string {
  if (err instanceof SpoolNetworkError || err instanceof SpoolTimeoutError) {
    return `cannot reach Spool at ${url} (${err.message}). Is it running? Start it with \`npm start\`, or set SPOOL_URL.`;
  }
  if (err instanceof AuthenticationError) {
    return `Spool refused SPOOL_API_KEY (${err.message}). Use the key Spool printed on its first start; see examples/README.md.`;
  }
  if (err instanceof ScenarioError) return err.message;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/** Resolves when `predicate` holds, polling every `intervalMs`; rejects after `timeoutMs`. */
export async function waitUntil(what: string, predicate: () => Promise<boolean> | boolean, timeoutMs = 15_000, intervalMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new ScenarioError(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** A short id that keeps one run's idempotency keys and names apart from the last run's. */
export const runId = Math.random().toString(36).slice(2, 8);

/** `2026-11-29T13:12:50.123Z` → `13:12:50.123`: enough to read a timeline. */
export function clock(at: Date | string = new Date()): string {
  return new Date(at).toISOString().slice(11, 23);
}
