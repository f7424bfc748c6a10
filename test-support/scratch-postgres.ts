import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@spool/server';

/**
 * One place for the throwaway PostgreSQL that `npm test`, the benchmarks and
 * the reliability scripts run against, so that each of them does not repeat
 * its own start, admin connection, database creation and (easy to get wrong
 * on a failure path) cleanup.
 *
 * With DATABASE_URL set (and `embeddedOnly` not), the databases are made on
 * that server, which needs CREATEDB rights; otherwise an embedded PostgreSQL
 * runs in a fresh temporary directory.
 */
export interface ScratchPostgresOptions {
  /** Prefix of the temporary directory's name, e.g. `spool-fuzz-`. */
  prefix: string;
  /** Extra settings for the embedded server (ignored on DATABASE_URL). */
  settings?: Record<string, string>;
  /** The embedded server's progress messages. */
  log?: (message: string) => void;
  /** Cleanup steps that failed; the other steps still run. Default: stderr. */
  warn?: (message: string) => void;
  /** Ignore DATABASE_URL: for measurements that need a server with known settings to themselves. */
  embeddedOnly?: boolean;
}

export interface ScratchPostgres {
  /** Connection string for the server's `postgres` maintenance database. */
  adminUrl: string;
  /** True when this is an embedded server of our own, false on DATABASE_URL. */
  embedded: boolean;
  /** The embedded server's temporary directory (deleted by stop()); null on DATABASE_URL. */
  dir: string | null;
  /** Connected to adminUrl; ended by stop(). */
  admin: pg.Client;
  urlFor(database: string): string;
  /** Creates an empty database, dropped again by stop(); returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** DROP DATABASE … WITH (FORCE); a failure is warned about, not thrown. */
  dropDatabase(name: string): Promise<void>;
  /** Drops what createDatabase made, ends admin, stops the embedded server and deletes its directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** `serverUrl` with its database replaced by `database`. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function startScratchPostgres(options: ScratchPostgresOptions): Promise<ScratchPostgres> {
  const warn = options.warn ?? ((message: string) => console.error(message));
  const external = options.embeddedOnly ? undefined : process.env.DATABASE_URL;
  let server: EmbeddedPostgres | null = null;
  let dir: string | null = null;
  const stopServer = async () => {
    if (server) await server.stop().catch((err) => warn(`could not stop the embedded PostgreSQL: ${err}`));
    try {
      if (dir) rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      warn(`could not delete ${dir}: ${err}`);
    }
  };

  let adminUrl = external;
  let admin: pg.Client;
  try {
    if (!adminUrl) {
      dir = mkdtempSync(join(tmpdir(), options.prefix));
      // The maintenance database: nothing needs the `spool` one it would create by default.
      server = await startEmbeddedPostgres({ dataDir: dir, database: 'postgres', settings: options.settings, log: options.log });
      adminUrl = server.adminUrl;
    }
    admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
  } catch (err) {
    await stopServer();
    throw err;
  }

  const created: string[] = [];
  let stopping: Promise<void> | null = null;
  const serverUrl = adminUrl;
  const dropDatabase = async (name: string) => {
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`).catch((err) => warn(`could not drop ${name}: ${err}`));
  };
  return {
    adminUrl,
    embedded: server !== null,
    dir,
    admin,
    urlFor: (database) => databaseUrl(serverUrl, database),
    async createDatabase(name) {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      created.push(name);
      return databaseUrl(serverUrl, name);
    },
    dropDatabase,
    stop() {
      stopping ??= (async () => {
        // An embedded cluster is deleted whole with its directory: dropping
        // its databases first would only wait for the checkpoint each DROP does.
        if (!server) {
          for (const name of [...created].reverse()) await dropDatabase(name);
        }
        await admin.end().catch((err) => warn(`could not close the admin connection: ${err}`));
        await stopServer();
      })();
      return stopping;
    },
  };
}
