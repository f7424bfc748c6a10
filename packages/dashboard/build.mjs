/**
 * Builds the dashboard into dist/ (run by `npm install` through the root
 * `prepare` script, and by the server on first start when dist/ is missing).
 *
 * Vite writes into a fresh temporary directory that then replaces dist/, so a
 * running server never serves a half-written build and two concurrent builds
 * cannot interleave their files. Plain JavaScript so it runs without tsx.
 */
import { renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const unique = `${process.pid}-${Date.now().toString(36)}`;
const staging = join(root, `.dist-staging-${unique}`);
const retired = join(root, `.dist-retired-${unique}`);

try {
  await build({ root, configFile: join(root, 'vite.config.ts'), build: { outDir: staging, emptyOutDir: true } });
  let hadDist = true;
  try {
    renameSync(dist, retired);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
    hadDist = false;
  }
  try {
    renameSync(staging, dist);
  } catch (err) {
    if (hadDist) renameSync(retired, dist);
    throw err;
  }
  if (hadDist) rmSync(retired, { recursive: true, force: true });
} catch (err) {
  rmSync(staging, { recursive: true, force: true });
  console.error(`dashboard build failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
