import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { credentials, status, type ServiceError } from '@grpc/grpc-js';
import { loadConfig } from '@spool/server';
import { startTestServer, type TestServer } from '../../../test-support/server.js';
import { grpcClient } from '../../../test-support/grpc.js';

let dir: string;
let server: TestServer;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'spool-grpc-tls-'));
  // A throwaway self-signed certificate for 127.0.0.1, made for this run only.
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  server = await startTestServer('grpctls', { grpcPort: 0, grpcTlsCert: join(dir, 'cert.pem'), grpcTlsKey: join(dir, 'key.pem') });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('gRPC over TLS', () => {
  it('serves TLS when a certificate and key are configured', async () => {
    const client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey, credentials.createSsl(readFileSync(join(dir, 'cert.pem'))));
    try {
      const { jobId, created } = await client.call('queue', 'Enqueue', { queueName: 'tls' });
      assert.equal(created, true);
      assert.equal((await client.call('queue', 'GetJob', { jobId })).job.id, jobId);
    } finally {
      client.close();
    }
  });

  it('does not answer plaintext clients', async () => {
    const client = grpcClient(`127.0.0.1:${server.grpcPort}`, server.apiKey);
    try {
      await assert.rejects(client.call('queue', 'GetJob', { jobId: 'x' }), (err: ServiceError) => err.code === status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });

  it('requires GRPC_TLS_CERT and GRPC_TLS_KEY together', () => {
    assert.throws(() => loadConfig({ GRPC_TLS_CERT: '/x/cert.pem' }), /GRPC_TLS_KEY/);
    assert.throws(() => loadConfig({ GRPC_TLS_KEY: '/x/key.pem' }), /GRPC_TLS_CERT/);
    assert.deepEqual(
      (({ grpcTlsCert, grpcTlsKey }) => ({ grpcTlsCert, grpcTlsKey }))(loadConfig({ GRPC_TLS_CERT: '/c', GRPC_TLS_KEY: '/k' })),
      { grpcTlsCert: '/c', grpcTlsKey: '/k' },
    );
  });
});
