import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The repository stands alone: its code and docs point a reader only at what is in it (docs/, the
 * OpenAPI document), never at files beside the checkout or at tracker numbers a reader cannot open.
 * The patterns are assembled so that this file does not match itself.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SECTION = '\u00a7';
const FORBIDDEN: { what: string; pattern: RegExp }[] = [
  { what: 'a path outside the repository', pattern: new RegExp(['\\.\\./', 'shared', '/'].join('')) },
  { what: 'a section of a contract file that is not here', pattern: new RegExp(`\\b(${['CON', 'TRACT'].join('')}|${['DES', 'IGN'].join('')})(\\.md)?\\s*${SECTION}`) },
  { what: 'an issue number', pattern: new RegExp(`\\b[Ii]ssues? #?\\d+\\b`) },
];

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter((f) => f && f !== 'package-lock.json' && /\.(ts|tsx|mjs|js|sql|md|proto|json|yaml|yml|css|html|sh)$|(^|\/)run$/.test(f));
}

describe('the repository stands alone', () => {
  it('no file cites a path outside it, a missing contract section or an issue number', () => {
    const files = trackedFiles();
    assert.ok(files.length > 100, `git ls-files found ${files.length} files`);
    const found: string[] = [];
    for (const file of files) {
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const { what, pattern } of FORBIDDEN) if (pattern.test(line)) found.push(`${file}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
      });
    }
    assert.deepEqual(found, []);
  });
});
