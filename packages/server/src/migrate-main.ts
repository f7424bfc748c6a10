/** `npm run migrate`: applies pending migrations and exits (embedded PostgreSQL when DATABASE_URL is unset). */
import { createPool, migrate } from '@spool/engine';
import { loadConfig } from './config.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

const config = loadConfig();
const embedded = config.databaseUrl ? null : await startEmbeddedPostgres({ dataDir: config.dataDir, log: console.log });
const db = createPool({ connectionString: config.databaseUrl ?? embedded!.url, max: 1 });
try {
  const result = await migrate(db, console.log);
  console.log(result.applied.length ? `applied ${result.applied.join(', ')}` : `schema is current (version ${result.current})`);
} finally {
  await db.end();
  await embedded?.stop();
}
