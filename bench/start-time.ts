/**
 * `node --import tsx bench/start-time.ts [rounds]`: how long the server takes
 * from its process start to answering /health/ready, run as `npm start` runs
 * it (the build in dist/, plain JavaScript) and as `npm run dev` runs it
 * (src/ through tsx), alternated. DATABASE_URL must point at a PostgreSQL
 * (an embedded one would time its own start instead); the schema is migrated
 * before the first round so no round pays for migrations.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const rounds = Number(process.argv[2] ?? 5);
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('set DATABASE_URL to a PostgreSQL to start against');

const VARIANTS = {
  'npm start (dist/, JavaScript)': ['--conditions=spool-dist', 'packages/server/dist/main.js'],
  'npm run dev (src/, tsx)': ['--import', 'tsx', 'packages/server/src/main.ts'],
} as const;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function startOnce(args: readonly string[]): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, PORT: String(port), GRPC_PORT: '0', LOG_LEVEL: 'warn' }, stdio: 'ignore' });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200) return performance.now() - started;
      } catch { /* not listening yet */ }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

const times: Record<string, number[]> = Object.fromEntries(Object.keys(VARIANTS).map((k) => [k, []]));
await startOnce(VARIANTS['npm start (dist/, JavaScript)']); // migrates, warms the disk cache
for (let round = 0; round < rounds; round++) {
  for (const [name, args] of Object.entries(VARIANTS)) times[name]!.push(await startOnce(args));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of Object.entries(times)) {
  console.log(`${name}: median ${median(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`);
}
