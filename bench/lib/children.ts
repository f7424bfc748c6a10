import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nowMs } from './http.js';

/** Messages bench worker processes send to the harness. */
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'started' }
  | { type: 'done'; n: number }
  /** Enqueue-to-start latencies (ms) and, in `at`, the matching enqueue stamps (nowMs()). */
  | { type: 'latency'; values: number[]; at: number[] }
  | { type: 'error'; message: string };

/**
 * A group of worker processes (each a real OS process, like production
 * workers). Protocol: child sends `ready` once connected; the harness sends
 * `go`; the child reports completions (`done`) and enqueue-to-start
 * latencies in batches; `stop` makes it exit.
 */
export class WorkerGroup {
  readonly #children: ChildProcess[] = [];
  completed = 0;
  readonly latencies: number[] = [];
  /** Enqueue stamp of each latency in `latencies`, same order (S9 buckets them by enqueue time). */
  readonly enqueuedAt: number[] = [];
  /** Completion reports as they arrived: [nowMs() at arrival, jobs]; reports come at most 20 ms after the fact. */
  readonly doneLog: [number, number][] = [];
  #waiters: { target: number; resolve: () => void }[] = [];
  #started = 0;
  #onStarted: (() => void) | null = null;
  #failure: Error | null = null;

  static async start(script: string, count: number, env: Record<string, string>): Promise<WorkerGroup> {
    const group = new WorkerGroup();
    const path = fileURLToPath(new URL(`../workers/${script}`, import.meta.url));
    const ready: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const child = fork(path, [], {
        // The worker scripts are TypeScript (tsx), but the packages they import
        // resolve to their build (spool-dist), as in an application that installed
        // the SDK; SPOOL_BENCH_SERVER=tsx runs those from source too.
        // WORKER_NODE_ARGS: extra node flags for the workers, e.g. --cpu-prof to profile them.
        execArgv: ['--import', 'tsx', ...(process.env.SPOOL_BENCH_SERVER === 'tsx' ? [] : ['--conditions=spool-dist']), ...(process.env.WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
        env: { ...process.env, ...env, WORKER_INDEX: String(i) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      group.#children.push(child);
      ready.push(new Promise((resolve, reject) => {
        child.on('message', (m: WorkerMessage) => {
          if (m.type === 'ready') resolve();
          else group.#onMessage(m);
        });
        child.once('exit', (code) => {
          reject(new Error(`${script} exited with ${code} before it was ready`));
          if (code !== 0 && code !== null) group.#fail(new Error(`${script} exited with code ${code}`));
        });
      }));
    }
    await Promise.all(ready);
    return group;
  }

  #onMessage(m: WorkerMessage): void {
    if (m.type === 'started') {
      this.#started += 1;
      if (this.#started >= this.#children.length) this.#onStarted?.();
    } else if (m.type === 'done') {
      this.completed += m.n;
      this.doneLog.push([nowMs(), m.n]);
      this.#waiters = this.#waiters.filter((w) => {
        if (this.completed < w.target) return true;
        w.resolve();
        return false;
      });
    } else if (m.type === 'latency') {
      for (let i = 0; i < m.values.length; i++) {
        this.latencies.push(m.values[i]!);
        this.enqueuedAt.push(m.at[i]!);
      }
    } else if (m.type === 'error') {
      this.#fail(new Error(m.message));
    }
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
  }

  go(): void {
    for (const child of this.#children) child.send({ type: 'go' });
  }

  /** Sends `go` and resolves once every worker said it is consuming (listening or long-polling). */
  async goAndWaitStarted(timeoutMs = 30_000): Promise<void> {
    const started = new Promise<void>((resolve, reject) => {
      this.#onStarted = resolve;
      setTimeout(() => reject(new Error('workers did not start in time')), timeoutMs).unref();
    });
    this.go();
    await started;
  }

  /** Resolves when `target` completions were reported (rejects on a worker error or after `timeoutMs`). */
  async waitFor(target: number, timeoutMs: number): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.completed < target) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#waiters.push({ target, resolve })),
        new Promise<void>((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out with ${this.completed}/${target} jobs done`)), timeoutMs); }),
      ]).finally(() => clearTimeout(timer));
    }
    if (this.#failure) throw this.#failure;
  }

  async stop(): Promise<void> {
    await Promise.all(this.#children.map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.send({ type: 'stop' });
    })));
  }
}

/** The child side: reports completions and latencies at most every 20 ms. */
export function workerReporter(): { started(): void; done(n: number): void; latency(enqueuedAt: number, startedAt?: number): void; error(err: unknown): void; flush(): void } {
  let done = 0;
  let latencies: number[] = [];
  let at: number[] = [];
  const flush = () => {
    if (done > 0) process.send?.({ type: 'done', n: done });
    if (latencies.length > 0) process.send?.({ type: 'latency', values: latencies, at });
    done = 0;
    latencies = [];
    at = [];
  };
  setInterval(flush, 20).unref();
  return {
    started() {
      process.send?.({ type: 'started' });
    },
    done(n) {
      done += n;
    },
    /** The job's enqueue stamp (its payload's `t`, nowMs() at the producer) and when it started here. */
    latency(enqueuedAt, startedAt = nowMs()) {
      latencies.push(startedAt - enqueuedAt);
      at.push(enqueuedAt);
    },
    error(err) {
      process.send?.({ type: 'error', message: err instanceof Error ? err.stack ?? err.message : String(err) });
    },
    flush,
  };
}

/** Child side: resolves on `go`; calls `onStop` (then exits) on `stop`. */
export function onControl(onStop: () => Promise<void> | void): Promise<void> {
  return new Promise((resolve) => {
    process.on('message', (m: { type: string }) => {
      if (m.type === 'go') resolve();
      if (m.type === 'stop') {
        Promise.resolve(onStop()).finally(() => process.exit(0));
      }
    });
    process.on('disconnect', () => process.exit(0));
  });
}
