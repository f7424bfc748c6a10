/**
 * A Spool process started before its PostgreSQL answers comes up once the
 * database does, instead of exiting (found by `npm run chaos`: replicas
 * restarted while PostgreSQL was down died with ECONNREFUSED). The database
 * is "down" until a loopback TCP forwarder starts listening on its port.
 */
import assert from 'node:assert/strict';
import { createConnection, createServer, type AddressInfo, type Server } from 'node:net';
import { after, before, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig, startSpool } from '@spool/server';
import { createTestDatabase, type TestDatabase } from '../../../test-support/db.js';

let t: TestDatabase;
let forwarder: Server | null = null;
before(async () => {
  t = await createTestDatabase('dbwait');
});
after(async () => {
  forwarder?.close();
  await t.drop();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('waits for an unreachable database at start and comes up when it answers', async () => {
  const real = new URL(t.url);
  const port = await freePort();
  const viaForwarder = new URL(t.url);
  viaForwarder.port = String(port);
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });

  const startedAt = Date.now();
  const starting = startSpool({ ...loadConfig({}), databaseUrl: viaForwarder.toString(), host: '127.0.0.1', port: 0, grpcPort: 0, logLevel: 'warn' }, { logger, announce: () => {} });
  setTimeout(() => {
    forwarder = createServer((socket) => {
      const upstream = createConnection(Number(real.port), real.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    forwarder.listen(port, '127.0.0.1');
  }, 1500);
  const spool = await starting;
  try {
    assert.ok(Date.now() - startedAt >= 1500, 'it did wait');
    assert.ok(warnings.some((m) => /database cannot be reached yet/.test(m)), `warned while waiting: ${JSON.stringify(warnings)}`);
    const health = await fetch(`${spool.url}/health`);
    assert.equal(health.status, 200);
  } finally {
    await spool.stop();
  }
});
