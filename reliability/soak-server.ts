/**
 * The Spool server of `npm run soak`, in its own process so that its RSS is
 * Spool's alone. Configured by the usual environment (DATABASE_URL, PORT …).
 * Prints one `SOAK_READY {"url","apiKey"}` line when it listens, and stops
 * cleanly on SIGTERM.
 *
 * SOAK_RETENTION_EVERY_MS: also runs the retention services' `runOnce()` at
 * that interval. Their own loops run every 60 s (jobs) and 5 min (dead
 * letters); calling the same code more often lets a run of a few minutes
 * reach its steady state, where table sizes must stop growing.
 */
import { organizationCreate } from '@spool/engine';
import { loadConfig, startSpool } from '@spool/server';

const RETAINERS = new Set(['job-retention', 'dlq-retention', 'schedule-run-pruner']);

const spool = await startSpool(loadConfig(), { announce: () => {} });
const org = await organizationCreate(spool.db, { name: 'soak', slug: `soak-${process.pid}`, planTier: 'unlimited', environment: 'development' });

const every = Number(process.env.SOAK_RETENTION_EVERY_MS ?? 0);
let sweeping = false;
const timer = every > 0
  ? setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    void Promise.all(spool.maintenance.filter((s) => RETAINERS.has(s.name)).map((s) => s.runOnce()))
      .catch((err) => spool.logger.warn({ err }, 'soak retention sweep failed'))
      .finally(() => (sweeping = false));
  }, every)
  : null;

process.stdout.write(`SOAK_READY ${JSON.stringify({ url: spool.url, apiKey: org.apiKey.key })}\n`);

process.on('SIGTERM', () => {
  if (timer) clearInterval(timer);
  spool.stop().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
});
