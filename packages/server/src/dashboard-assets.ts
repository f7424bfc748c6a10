import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** Where the dashboard's files are, and whether they can be served yet. */
export type DashboardState =
  | { kind: 'ready'; dir: string }
  | { kind: 'missing' }
  | { kind: 'building' }
  | { kind: 'failed'; message: string }
  | { kind: 'absent' };

export interface BuildLog {
  info(message: string): void;
  error(message: string): void;
}

/** packages/dashboard in this checkout (the server runs from source, see CONTRIBUTING). */
export const DASHBOARD_PACKAGE_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));

/**
 * The dashboard's built files (packages/dashboard/dist). `npm install` builds
 * them (root `prepare`); when they are missing, e.g. after
 * `npm ci --ignore-scripts`, the first server start builds them in a child
 * process and the API serves meanwhile. One instance per process, so servers
 * sharing a process (tests) start at most one build.
 */
export class DashboardAssets {
  #state: DashboardState;
  #building: Promise<DashboardState> | null = null;

  constructor(readonly packageDir: string = DASHBOARD_PACKAGE_DIR) {
    this.#state = this.#probe();
  }

  get distDir(): string {
    return join(this.packageDir, 'dist');
  }

  get state(): DashboardState {
    return this.#state;
  }

  #probe(): DashboardState {
    if (existsSync(join(this.distDir, 'index.html'))) return { kind: 'ready', dir: this.distDir };
    if (!existsSync(join(this.packageDir, 'build.mjs'))) return { kind: 'absent' };
    return { kind: 'missing' };
  }

  /** Starts a build when the files are missing; resolves when they can be served (or cannot). */
  ensure(log: BuildLog): Promise<DashboardState> {
    if (this.#state.kind === 'ready' || this.#state.kind === 'absent') return Promise.resolve(this.#state);
    this.#building ??= this.#build(log).finally(() => {
      this.#building = null;
    });
    return this.#building;
  }

  async #build(log: BuildLog): Promise<DashboardState> {
    this.#state = { kind: 'building' };
    const started = Date.now();
    log.info(`dashboard: ${this.distDir} is missing; building it now (vite build, a few seconds); the API is already serving`);
    const outcome = await new Promise<{ code: number | null; output: string[] }>((resolve) => {
      const output: string[] = [];
      const child = spawn(process.execPath, [join(this.packageDir, 'build.mjs')], { cwd: this.packageDir, stdio: ['ignore', 'pipe', 'pipe'] });
      const collect = (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          const text = line.replace(/\u001b\[[0-9;]*m/g, '').trim();
          if (!text) continue;
          output.push(text);
          log.info(`dashboard build: ${text}`);
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', (err) => {
        output.push(err.message);
        resolve({ code: -1, output });
      });
      child.on('close', (code) => resolve({ code, output }));
    });
    const probed = this.#probe();
    if (outcome.code === 0 && probed.kind === 'ready') {
      log.info(`dashboard: built in ${Date.now() - started} ms`);
      this.#state = probed;
    } else {
      const message = outcome.output.slice(-5).join(' | ') || `build exited with code ${outcome.code}`;
      log.error(`dashboard: build failed (${message}); run \`npm run build -w @spool/dashboard\` to see why`);
      this.#state = { kind: 'failed', message };
    }
    return this.#state;
  }
}

let shared: DashboardAssets | null = null;

/** The process-wide dashboard assets. */
export function dashboardAssets(): DashboardAssets {
  shared ??= new DashboardAssets();
  return shared;
}
