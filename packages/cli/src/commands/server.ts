/**
 * `spool start` and `spool migrate`: run the server's entry points in a
 * child process, resolved relative to this package so they work from any
 * directory: the build in dist/ as `npm start` runs it (`node
 * --conditions=spool-dist …`), or the source through tsx when there is no
 * build. The child inherits the terminal; the CLI
 * forwards SIGINT/SIGTERM to it and exits with its code.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { intIn, UsageError } from '../context.js';

const SERVER_SRC = new URL('../../../server/src/', import.meta.url);
const SERVER_DIST = new URL('../../../server/dist/', import.meta.url);

/** Node's arguments for a server entry point (`main.ts`, `migrate-main.ts`). */
function serverEntry(file: string): string[] {
  const built = fileURLToPath(new URL(file.replace(/\.ts$/, '.js'), SERVER_DIST));
  if (existsSync(built)) return ['--conditions=spool-dist', built];
  const path = fileURLToPath(new URL(file, SERVER_SRC));
  if (!existsSync(path)) throw new UsageError(`cannot find the Spool server at ${path}: \`spool ${file.startsWith('migrate') ? 'migrate' : 'start'}\` runs from a Spool checkout`);
  return ['--import', import.meta.resolve('tsx'), path];
}

/**
 * Runs `node <args>` (serverEntry) and resolves with its exit code. The child
 * gets its own process group so that each signal reaches it exactly once, from
 * this process: a Ctrl-C or a group-wide SIGTERM would otherwise arrive twice,
 * and the server treats a second signal as "exit now, skip the graceful stop".
 */
export function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(process.execPath, args, { stdio: 'inherit', env, detached: true });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const killChild = () => child.kill('SIGTERM');
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  process.on('exit', killChild);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      process.off('exit', killChild);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 143));
    });
  });
}

export function startCommand(): Command {
  return new Command('start')
    .description('run the Spool server (embedded PostgreSQL unless DATABASE_URL is set)')
    .addOption(new Option('-p, --port <port>', 'HTTP port (env PORT, default 8080)').argParser(intIn(0, 65_535)))
    .option('--host <host>', 'listen address (env HOST, default 127.0.0.1 in development, 0.0.0.0 in production)')
    .option('--database-url <url>', 'use this PostgreSQL instead of the embedded one (env DATABASE_URL)')
    .action(async (opts: { port?: number; host?: string; databaseUrl?: string }) => {
      const env = { ...process.env };
      if (opts.port !== undefined) env.PORT = String(opts.port);
      if (opts.host !== undefined) env.HOST = opts.host;
      if (opts.databaseUrl !== undefined) env.DATABASE_URL = opts.databaseUrl;
      process.exitCode = await runNode(serverEntry('main.ts'), env);
    });
}

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply database migrations and exit')
    .option('--database-url <url>', 'PostgreSQL to migrate (env DATABASE_URL; default the embedded one)')
    .action(async (opts: { databaseUrl?: string }) => {
      const env = { ...process.env };
      if (opts.databaseUrl !== undefined) env.DATABASE_URL = opts.databaseUrl;
      process.exitCode = await runNode(serverEntry('migrate-main.ts'), env);
    });
}
