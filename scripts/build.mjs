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
 * runs the build.
 *
 * A build can run while a process runs the previous one (`npm test` builds
 * while something else in the same checkout serves from dist/), so dist/ is
 * never missing or half-written:
 *  - each build goes to its own directory, `.dist-build-<hash of the
 *    sources>` beside dist/ (same depth, so relative paths resolve the same);
 *  - dist is a symbolic link to it, replaced by one rename (atomic);
 *  - sources that did not change are not rebuilt at all;
 *  - the two builds before the current one are kept, because node resolves
 *    the link when it loads a module, so a running process reads the files
 *    of the build it started with.
 * Plain JavaScript so it runs without tsx.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['protocol', 'engine', 'server', 'sdk', 'cli'];
const BUILD_PREFIX = '.dist-build-';
const KEEP_PREVIOUS = 2;

function filesUnder(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  }).sort();
}

/** What the build depends on: every source file's path and content, this script and esbuild's version. */
function sourceHash(src, files) {
  const hash = createHash('sha256').update(esbuildVersion).update(readFileSync(fileURLToPath(import.meta.url)));
  for (const file of files) hash.update(relative(src, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

function currentTarget(dist) {
  try {
    return lstatSync(dist).isSymbolicLink() ? readlinkSync(dist) : null;
  } catch {
    return null;
  }
}

/** Removes builds older than the current one and the KEEP_PREVIOUS before it (by the time each became current). */
function prune(pkg, current) {
  const builds = readdirSync(pkg)
    .filter((name) => name.startsWith(BUILD_PREFIX) && name !== current)
    .map((name) => ({ name, mtime: statSync(join(pkg, name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of builds.slice(KEEP_PREVIOUS)) rmSync(join(pkg, old.name), { recursive: true, force: true });
}

const started = Date.now();
const rebuilt = [];
for (const name of PACKAGES) {
  const pkg = join(root, 'packages', name);
  const src = join(pkg, 'src');
  const dist = join(pkg, 'dist');
  const files = filesUnder(src);
  const target = `${BUILD_PREFIX}${sourceHash(src, files)}`;
  if (currentTarget(dist) === target && existsSync(join(pkg, target))) continue;

  const out = join(pkg, target);
  if (!existsSync(out)) {
    const staging = join(pkg, `.dist-staging-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
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
    try {
      renameSync(staging, out);
    } catch (err) {
      // A concurrent build of the same sources got there first: its output is this one's.
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(out)) throw err;
    }
  }
  const now = new Date();
  utimesSync(out, now, now);
  // A dist/ directory from before builds were linked goes once; from then on dist is only ever swapped.
  if (existsSync(dist) && !lstatSync(dist).isSymbolicLink()) rmSync(dist, { recursive: true, force: true });
  const link = join(pkg, `.dist-link-${process.pid}`);
  rmSync(link, { force: true });
  symlinkSync(target, link, 'dir');
  renameSync(link, dist);
  prune(pkg, target);
  rebuilt.push(`packages/${name}/dist`);
}
console.log(rebuilt.length ? `built ${rebuilt.join(', ')} in ${Date.now() - started} ms` : `packages/*/dist are current (${Date.now() - started} ms)`);
