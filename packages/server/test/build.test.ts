import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * scripts/build.mjs in a scratch checkout of five one-file packages (the real script, the real
 * esbuild): dist/ stays readable while builds replace it, and unchanged sources are not rebuilt.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGES = ['protocol', 'engine', 'server', 'sdk', 'cli'];
const scratch = mkdtempSync(join(tmpdir(), 'spool-build-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

mkdirSync(join(scratch, 'scripts'));
cpSync(join(ROOT, 'scripts/build.mjs'), join(scratch, 'scripts/build.mjs'));
symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'), 'dir');
const writeSources = (version: number) => {
  for (const name of PACKAGES) {
    mkdirSync(join(scratch, 'packages', name, 'src'), { recursive: true });
    writeFileSync(join(scratch, 'packages', name, 'src/index.ts'), `export const version: number = ${version};\n`);
    writeFileSync(join(scratch, 'packages', name, 'src/statement.sql'), `SELECT ${version};\n`);
  }
};

function runBuild(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(scratch, 'scripts/build.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    child.on('close', (code) => (code === 0 ? resolve(output) : reject(new Error(`build exited with ${code}:\n${output}`))));
  });
}

const engine = join(scratch, 'packages/engine');

describe('scripts/build.mjs', () => {
  it('links dist to a build of the sources, copies SQL, and does not rebuild unchanged sources', async () => {
    writeSources(1);
    assert.match(await runBuild(), /^built packages\/protocol\/dist, packages\/engine\/dist/);
    assert.ok(lstatSync(join(engine, 'dist')).isSymbolicLink());
    const first = readlinkSync(join(engine, 'dist'));
    assert.match(readFileSync(join(engine, 'dist/index.js'), 'utf8'), /version = 1/);
    assert.equal(readFileSync(join(engine, 'dist/statement.sql'), 'utf8'), 'SELECT 1;\n');
    assert.match(await runBuild(), /are current/);
    assert.equal(readlinkSync(join(engine, 'dist')), first);
  });

  it('never leaves dist missing or half-written while builds replace it, and keeps the two builds before the current one', async () => {
    let building = true;
    const seen = new Set<string>();
    let missing = 0;
    const watcher = (async () => {
      while (building) {
        const index = join(engine, 'dist/index.js');
        const sql = join(engine, 'dist/statement.sql');
        try {
          if (!existsSync(sql)) missing++;
          seen.add(/version = (\d+)/.exec(readFileSync(index, 'utf8'))?.[1] ?? 'unreadable');
        } catch {
          missing++;
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let version = 2; version <= 6; version++) {
      writeSources(version);
      await runBuild();
    }
    building = false;
    await watcher;
    assert.equal(missing, 0, 'dist/index.js or dist/statement.sql was missing while a build ran');
    assert.ok(!seen.has('unreadable'), `dist/index.js was read without its version: ${[...seen]}`);
    assert.ok(seen.has('6'));
    assert.match(readFileSync(join(engine, 'dist/index.js'), 'utf8'), /version = 6/);
    const builds = readdirSync(engine).filter((n) => n.startsWith('.dist-build-'));
    assert.equal(builds.length, 3, `builds kept: ${builds}`);
    assert.ok(!readdirSync(engine).some((n) => n.startsWith('.dist-staging-') || n.startsWith('.dist-link-')));
  });

  it('replaces a dist/ directory left by an older build with the link', async () => {
    const protocol = join(scratch, 'packages/protocol');
    rmSync(join(protocol, 'dist'));
    mkdirSync(join(protocol, 'dist'));
    writeFileSync(join(protocol, 'dist/stale.js'), '');
    await runBuild();
    assert.ok(lstatSync(join(protocol, 'dist')).isSymbolicLink());
    assert.ok(!existsSync(join(protocol, 'dist/stale.js')));
    assert.match(readFileSync(join(protocol, 'dist/index.js'), 'utf8'), /version = 6/);
  });
});
