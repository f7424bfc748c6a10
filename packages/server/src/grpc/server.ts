import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { AppContext } from '../app.js';
import type { GrpcContext } from './call.js';
import { queueService } from './queue-service.js';
import { workerService } from './worker-service.js';

/** The service definition, shipped with the server (a verbatim copy of the SDK's proto). */
export const PROTO_PATH = fileURLToPath(new URL('../../proto/spooled.proto', import.meta.url));

/**
 * How the server decodes messages: field names exactly as in the proto,
 * int64 and enums as strings, defaults filled in, the name of the set oneof
 * member alongside it. Clients pick their own options (the SDK uses camelCase);
 * the wire bytes do not depend on them.
 */
const MAX_MESSAGE_BYTES = 6 * 1024 * 1024;

const SERVER_LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

export interface GrpcServerOptions {
  /** The context REST handlers get: gRPC calls share its pool, tokens, claim waiters and enqueue batcher. */
  context: AppContext;
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** PEM files; both set = TLS, neither = plaintext. */
  tls: { certFile: string; keyFile: string } | null;
  /** How long stop() lets calls finish before cutting them off. */
  shutdownGraceMs?: number;
}

interface ServiceConstructors {
  spooled: { v1: { QueueService: grpc.ServiceClientConstructor; WorkerService: grpc.ServiceClientConstructor } };
}

function credentials(tls: GrpcServerOptions['tls']): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(tls.certFile), private_key: readFileSync(tls.keyFile) }], false);
}

function bindAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The gRPC listener (spooled.v1 QueueService and WorkerService) over the same
 * engine, auth and tenancy as the REST API. start()/stop() follow the
 * service life cycle: stop() ends streams with an OK status, lets unary calls
 * finish within the grace period, then forces the rest closed.
 */
export class GrpcServer {
  readonly name = 'grpc';
  readonly #options: GrpcServerOptions;
  readonly #shutdown = new AbortController();
  #server: grpc.Server | null = null;
  #port = 0;
  #stopping: Promise<void> | null = null;

  constructor(options: GrpcServerOptions) {
    this.#options = options;
  }

  /** The bound port (after start). */
  get port(): number {
    return this.#port;
  }

  /** Binds and starts serving; `port` is then the bound port. */
  async start(): Promise<void> {
    if (this.#server) return;
    const o = this.#options;
    const definition = protoLoader.loadSync(PROTO_PATH, SERVER_LOADER_OPTIONS);
    const proto = grpc.loadPackageDefinition(definition) as unknown as ServiceConstructors;
    const ctx: GrpcContext = { ...o.context, shutdown: this.#shutdown.signal };
    // Room above the 1 MiB payload limit, so an oversized payload gets our INVALID_ARGUMENT
    // rather than grpc-js's RESOURCE_EXHAUSTED (which SDK clients retry as a rate limit).
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
    server.addService(proto.spooled.v1.QueueService.service, queueService(ctx));
    server.addService(proto.spooled.v1.WorkerService.service, workerService(ctx));
    this.#server = server;
    this.#port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(bindAddress(o.host, o.port), credentials(o.tls), (err, port) => (err ? reject(err) : resolve(port)));
    }).catch((err: unknown) => {
      this.#server = null;
      throw err;
    });
  }

  /** Stops accepting calls, ends streams cleanly, waits up to the grace period, then forces. Safe twice. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const server = this.#server;
      this.#shutdown.abort();
      if (!server) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#options.context.logger.warn('gRPC calls still running after the grace period: closing them');
          server.forceShutdown();
          resolve();
        }, this.#options.shutdownGraceMs ?? 10_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    })();
    return this.#stopping;
  }
}
