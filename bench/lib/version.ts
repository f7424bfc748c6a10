import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The installed version of a package (read from node_modules; some packages do
 * not export package.json), with the Node range it declares, so the report
 * says when a peer runs on a Node older than it asks for.
 */
export function installedVersion(pkg: string): string {
  const path = fileURLToPath(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url));
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as { version: string; engines?: { node?: string } };
  const wants = manifest.engines?.node;
  return wants ? `${manifest.version} (declares node ${wants}; run here on ${process.version})` : manifest.version;
}
