/**
 * Builds the JavaScript that `npm start` runs: each package's src/ becomes
 * dist/ beside it (run by `npm install` through the root `prepare` script,
 * or `npm run build`). Files are transpiled one by one, not bundled, so
 * dist/ mirrors src/ and every path the code resolves from its own location
 * (SQL files, migrations, the gRPC proto, the dashboard bundle, package.json)
 * is the same from both; the files that are not TypeScript (SQL) are copied.
 * Types are checked by `npm run typecheck`, not here.
 *
 * Packages export their dist/ under the `spool-dist` condition and src/
 * otherwise, so tests, benchmarks and `npm run dev` keep running the
 * TypeScript through tsx, and only `node --conditions=spool-dist` (npm start)
 * runs the build. Each package's build goes to a fresh directory that then
 * replaces dist/, so a half-written build is never run.
 * Plain JavaScript so it runs without tsx.
 */
import { cpSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['protocol', 'engine', 'server', 'sdk', 'cli'];

function filesUnder(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const started = Date.now();
for (const name of PACKAGES) {
  const pkg = join(root, 'packages', name);
  const src = join(pkg, 'src');
  const dist = join(pkg, 'dist');
  const staging = join(pkg, `.dist-staging-${process.pid}`);
  const files = filesUnder(src);
  const sources = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  await build({
    entryPoints: sources,
    outdir: staging,
    outbase: src,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  for (const asset of files.filter((f) => !f.endsWith('.ts'))) cpSync(asset, join(staging, relative(src, asset)));
  rmSync(dist, { recursive: true, force: true });
  renameSync(staging, dist);
}
console.log(`built ${PACKAGES.map((p) => `packages/${p}/dist`).join(', ')} in ${Date.now() - started} ms`);
