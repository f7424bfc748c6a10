import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';

/**
 * A real PgBouncer (Debian's `pgbouncer` package) in transaction pooling
 * mode in front of one PostgreSQL server, with its config, log and auth file
 * in a temporary directory and a free port on 127.0.0.1. Clients connect
 * without a password (auth_type trust: loopback only); PgBouncer logs in to
 * PostgreSQL with the user and password of the target URL.
 */
export interface PgBouncer {
  port: number;
  version: string;
  /** `target` (any database on the same server), routed through PgBouncer. */
  urlFor(target: string): string;
  /** The admin console (`SHOW POOLS`, `SHOW CLIENTS`, …). */
  adminUrl: string;
  log(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per database/user pair. Default 10. */
  poolSize?: number;
}

/**
 * The pgbouncer binary: $PGBOUNCER, else on PATH, else where Debian puts it
 * (/usr/sbin, which is not on an ordinary user's PATH).
 */
export function pgbouncerBinary(): string {
  const dirs = process.env.PGBOUNCER ? [] : (process.env.PATH ?? '').split(delimiter).filter(Boolean).concat('/usr/sbin', '/usr/local/sbin');
  const candidates = process.env.PGBOUNCER ? [process.env.PGBOUNCER] : dirs.map((dir) => join(dir, 'pgbouncer'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  const where = process.env.PGBOUNCER ? `PGBOUNCER=${process.env.PGBOUNCER} is not an executable` : 'pgbouncer is not installed (not on PATH, nor in /usr/sbin)';
  throw new Error(`${where}: run \`apt-get install pgbouncer\` (Debian/Ubuntu), or set PGBOUNCER to its path. This test does not skip.`);
}

/** `PgBouncer 1.18.0` → 1.18.0; throws a message saying how to install it when missing. */
export function pgbouncerVersion(): string {
  const out = execFileSync(pgbouncerBinary(), ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return /PgBouncer (\S+)/.exec(out)?.[1] ?? out.trim();
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** PgBouncer refuses to run as root; as root it runs as `postgres` (`-u`), which must read its directory. */
function runAsUser(): { name: string; uid: number; gid: number } | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  try {
    return {
      name: 'postgres',
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    };
  } catch {
    throw new Error('running as root: PgBouncer needs an unprivileged user to run as, and there is no `postgres` user (Debian\'s pgbouncer package creates one)');
  }
}

const quote = (value: string) => `"${value.replace(/"/g, '""')}"`;

export async function startPgBouncer(targetUrl: string, options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const version = pgbouncerVersion();
  const target = new URL(targetUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const password = decodeURIComponent(target.password);
  const dir = mkdtempSync(join(tmpdir(), 'spool-pgbouncer-'));
  const owner = runAsUser();
  const logFile = join(dir, 'pgbouncer.log');
  const configFile = join(dir, 'pgbouncer.ini');
  const authFile = join(dir, 'userlist.txt');
  writeFileSync(authFile, `${quote(user)} ${quote(password)}\n`, { mode: 0o600 });

  let child: ChildProcess | null = null;
  let port = 0;
  // The free port may be taken between probing and PgBouncer binding it: try again.
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    writeFileSync(configFile, [
      '[databases]',
      // Any database name, on the target server, as the connecting user.
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${authFile}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 10}`,
      'max_client_conn = 500',
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'), { mode: 0o600 });
    if (owner) for (const file of [dir, configFile, authFile]) chownSync(file, owner.uid, owner.gid);
    const args = owner ? ['-u', owner.name, configFile] : [configFile];
    const started = spawn(pgbouncerBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    started.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let exited = false;
    started.once('exit', () => (exited = true));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !exited) {
      const client = new pg.Client({ connectionString: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer`, connectionTimeoutMillis: 1000 });
      try {
        await client.connect();
        await client.end();
        child = started;
        break;
      } catch {
        await client.end().catch(() => {});
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (!child) {
      started.kill('SIGKILL');
      if (!/bind|Address already in use/i.test(stderr + readLog(logFile))) {
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`pgbouncer did not start:\n${stderr}${readLog(logFile)}`);
      }
    }
  }
  if (!child) throw new Error(`pgbouncer did not start after 5 ports:\n${readLog(logFile)}`);
  const running = child;

  return {
    port,
    version,
    urlFor(database: string) {
      const u = new URL(database);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      u.password = '';
      return u.toString();
    },
    adminUrl: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer`,
    log: () => readLog(logFile),
    async stop() {
      if (running.exitCode === null && running.signalCode === null) {
        const exited = new Promise((r) => running.once('exit', r));
        running.kill('SIGINT');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
