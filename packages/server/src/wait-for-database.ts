import { setTimeout as sleep } from 'node:timers/promises';
import { isTransientDatabaseError } from './transient-database-error.js';

/**
 * Runs `fn` (the first contact with the database at start: migrations),
 * retrying for up to `waitMs` while the database cannot be reached, so that a
 * Spool process started before its PostgreSQL (a compose file, a host
 * reboot, a database restart under a supervisor that restarts Spool) comes up
 * by itself instead of exiting. Any other failure is thrown at once.
 */
export async function waitForDatabase<T>(fn: () => Promise<T>, options: { waitMs: number; log: (message: string, err: unknown) => void }): Promise<T> {
  const giveUpAt = Date.now() + options.waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientDatabaseError(err) || Date.now() >= giveUpAt) throw err;
      const delay = Math.min(250 * 2 ** (attempt - 1), 2000);
      options.log(`the database cannot be reached yet; retrying in ${delay} ms`, err);
      await sleep(delay);
    }
  }
}
