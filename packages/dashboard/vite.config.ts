import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const COMPRESSIBLE = /\.(js|css|html|svg|json)$/;

/**
 * Writes .gz and .br beside every text asset, so the server (@fastify/static
 * with preCompressed) sends compressed files without compressing per request.
 */
function precompress(): Plugin {
  return {
    name: 'spool:precompress',
    apply: 'build',
    writeBundle(options, bundle) {
      const dir = options.dir;
      if (!dir) return;
      for (const name of Object.keys(bundle)) {
        if (!COMPRESSIBLE.test(name)) continue;
        const raw = readFileSync(join(dir, name));
        if (raw.length < 1024) continue;
        writeFileSync(join(dir, `${name}.gz`), gzipSync(raw, { level: 9 }));
        writeFileSync(join(dir, `${name}.br`), brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
      }
    },
  };
}

const api = process.env.SPOOL_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { target: 'es2022', sourcemap: false, reportCompressedSize: true },
  plugins: [precompress()],
  // `npm run dev -w @spool/dashboard`: hot reload against a running Spool.
  server: { proxy: { '/api': { target: api, changeOrigin: true }, '/health': api, '/metrics': api, '/docs': api } },
});
