import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The installed version of a package (read from node_modules; some packages do not export package.json). */
export function installedVersion(pkg: string): string {
  const path = fileURLToPath(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url));
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}
