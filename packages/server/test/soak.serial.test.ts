/**
 * The short variant of `npm run soak`: 35 s of the same mixed load, with the
 * same bounds (RSS, connections, table sizes, backlog, progress). The script
 * starts its own embedded PostgreSQL and Spool server process and exits
 * non-zero when a bound fails; its sample table is printed as diagnostics.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { it } from 'node:test';

const root = new URL('../../../', import.meta.url).pathname;

it('npm run soak -- --seconds 35: RSS, connections and table sizes stay bounded', { timeout: 120_000 }, async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'reliability/soak.ts', '--seconds', '35', '--rate', '30'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  for (const line of out.trimEnd().split('\n')) t.diagnostic(line);
  assert.equal(code, 0, `soak exited with ${code}:\n${out}`);
  assert.match(out, /^soak: .* server_errors=0 .* bounded=yes$/m);
  const rows = out.split('\n').filter((line) => /^\s+\d+\s+\d+\.\d/.test(line));
  assert.ok(rows.length >= 12, `${rows.length} samples`);
});
