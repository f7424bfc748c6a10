/**
 * `npm start`: Spool with its own PostgreSQL unless DATABASE_URL is set.
 * The only place (with the CLI) that installs signal handlers.
 */
import { loadConfig } from './config.js';
import { errorFields } from './log-fields.js';
import { startSpool, type RunningSpool } from './runtime.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    console.error(`spool: ${(err as Error).message}`);
    process.exit(2);
  }
  // The handlers go in before the start: a signal that arrives while Spool
  // starts (it logs that it listens before startSpool returns) stops it once
  // it has started, instead of killing it with the default action.
  let spool: RunningSpool | null = null;
  let requested: string | null = null;
  let signals = 0;
  const stop = (running: RunningSpool, signal: string) => {
    running.logger.info({ signal }, 'shutting down');
    running.stop().then(
      () => running.logger.flush(() => process.exit(0)),
      (err) => {
        running.logger.error({ error: errorFields(err) }, 'shutdown failed');
        running.logger.flush(() => process.exit(1));
      },
    );
  };
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      if (spool) spool.logger.warn('second signal: exiting now');
      else console.error('spool: second signal: exiting now');
      process.exit(1);
    }
    if (spool) stop(spool, signal);
    else requested = signal;
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  spool = await startSpool(config);
  if (requested) stop(spool, requested);
}

main().catch((err) => {
  console.error(`spool: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof Error && err.cause) console.error(err.cause);
  process.exit(1);
});
