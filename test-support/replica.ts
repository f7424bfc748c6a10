import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * A Spool server process (packages/server/src/main.ts, as `npm start` runs
 * it) on a given database, listening on free ports. Used wherever several
 * replicas share one database: the replica tests and `npm run chaos`.
 */
export interface Replica {
  child: ChildProcess;
  pid: number;
  url: string;
  exited: Promise<number | null>;
}

const ROOT = new URL('../', import.meta.url).pathname;

export interface ReplicaOptions {
  /** Every log line (JSON) the process prints, stdout and stderr. */
  onLine?: (line: string) => void;
  /** How long to wait for "Spool is listening". Default 60 s. */
  startTimeoutMs?: number;
  /** Aborting kills the process (SIGKILL) if it is still starting, and the start rejects. */
  signal?: AbortSignal;
}

/** The operator token every replica started here accepts on /metrics. */
export const REPLICA_METRICS_TOKEN = 'replica-metrics-token';

export function startReplica(databaseUrl: string, env: Record<string, string> = {}, options: ReplicaOptions = {}): Promise<Replica> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'info', DATABASE_POOL_MAX: '6', METRICS_TOKEN: REPLICA_METRICS_TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8000);
  });
  if (options.onLine) createInterface({ input: child.stderr! }).on('line', options.onLine);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`replica did not start in ${options.startTimeoutMs ?? 60_000} ms: ${stderr}`));
    }, options.startTimeoutMs ?? 60_000);
    const abort = () => child.kill('SIGKILL');
    options.signal?.addEventListener('abort', abort, { once: true });
    void exited.then(() => options.signal?.removeEventListener('abort', abort));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`replica exited with ${code}: ${stderr}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      options.onLine?.(line);
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'Spool is listening' && entry.url) {
          clearTimeout(timer);
          resolve({ child, pid: child.pid!, url: entry.url, exited });
        }
      } catch {
        // not a log line
      }
    });
  });
}
