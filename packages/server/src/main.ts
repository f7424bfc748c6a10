/**
 * `npm start`: Spool with its own PostgreSQL unless DATABASE_URL is set.
 * The only place (with the CLI) that installs signal handlers.
 */
import { loadConfig } from './config.js';
import { errorFields } from './log-fields.js';
import { startSpool } from './runtime.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    console.error(`spool: ${(err as Error).message}`);
    process.exit(2);
  }
  const spool = await startSpool(config);
  let signals = 0;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      spool.logger.warn('second signal: exiting now');
      process.exit(1);
    }
    spool.logger.info({ signal }, 'shutting down');
    spool.stop().then(
      () => spool.logger.flush(() => process.exit(0)),
      (err) => {
        spool.logger.error({ error: errorFields(err) }, 'shutdown failed');
        spool.logger.flush(() => process.exit(1));
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  console.error(`spool: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof Error && err.cause) console.error(err.cause);
  process.exit(1);
});
