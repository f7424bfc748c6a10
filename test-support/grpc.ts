import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

/**
 * A gRPC client for tests, built from the server's proto with the options the
 * Spooled SDK uses (camelCase fields, int64 and enums as strings, defaults,
 * oneof names), so tests see what SDK users see.
 */
export const SDK_LOADER_OPTIONS: protoLoader.Options = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true };
const PROTO_PATH = fileURLToPath(new URL('../packages/server/proto/spooled.proto', import.meta.url));

interface Constructors {
  spooled: { v1: { QueueService: grpc.ServiceClientConstructor; WorkerService: grpc.ServiceClientConstructor } };
}

let loaded: Constructors | null = null;
function proto(): Constructors {
  loaded ??= grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, SDK_LOADER_OPTIONS)) as unknown as Constructors;
  return loaded;
}

export type Auth = { apiKey: string } | { bearer: string } | null;

/** Metadata carrying a credential as `x-api-key` (default) or `authorization: Bearer`. */
export function authMetadata(auth: Auth): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (auth && 'apiKey' in auth) metadata.add('x-api-key', auth.apiKey);
  if (auth && 'bearer' in auth) metadata.add('authorization', `Bearer ${auth.bearer}`);
  return metadata;
}

export interface GrpcTestClient {
  queue: grpc.Client & Record<string, any>;
  workers: grpc.Client & Record<string, any>;
  /** Unary call; rejects with the grpc ServiceError (code, details). */
  call<T = any>(service: 'queue' | 'workers', method: string, request: unknown, auth?: Auth): Promise<T>;
  metadata(auth?: Auth): grpc.Metadata;
  close(): void;
}

export function grpcClient(address: string, apiKey: string, credentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): GrpcTestClient {
  const p = proto();
  const queue = new p.spooled.v1.QueueService(address, credentials, options) as unknown as GrpcTestClient['queue'];
  const workers = new p.spooled.v1.WorkerService(address, credentials, options) as unknown as GrpcTestClient['workers'];
  const defaultAuth: Auth = { apiKey };
  const metadata = (auth: Auth = defaultAuth) => authMetadata(auth);
  return {
    queue,
    workers,
    metadata,
    call(service, method, request, auth = defaultAuth) {
      const client = service === 'queue' ? queue : workers;
      return new Promise((resolve, reject) => {
        client[method](request, metadata(auth), { deadline: Date.now() + 30_000 }, (err: grpc.ServiceError | null, response: any) => (err ? reject(err) : resolve(response)));
      });
    },
    close() {
      queue.close();
      workers.close();
    },
  };
}

/** JSON → google.protobuf.Struct as a camelCase client writes it. */
export function toStruct(object: Record<string, unknown>): { fields: Record<string, unknown> } {
  const value = (v: unknown): Record<string, unknown> => {
    if (v === null) return { nullValue: 'NULL_VALUE' };
    if (typeof v === 'number') return { numberValue: v };
    if (typeof v === 'string') return { stringValue: v };
    if (typeof v === 'boolean') return { boolValue: v };
    if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
    return { structValue: toStruct(v as Record<string, unknown>) };
  };
  return { fields: Object.fromEntries(Object.entries(object).map(([k, v]) => [k, value(v)])) };
}

/** google.protobuf.Struct as the SDK options decode it → JSON. */
export function fromStruct(struct: { fields?: Record<string, any> } | null): Record<string, unknown> | null {
  if (!struct) return null;
  const value = (v: any): unknown => {
    switch (v.kind) {
      case 'numberValue': return v.numberValue;
      case 'stringValue': return v.stringValue;
      case 'boolValue': return v.boolValue;
      case 'structValue': return fromStruct(v.structValue);
      case 'listValue': return (v.listValue.values ?? []).map(value);
      default: return null;
    }
  };
  return Object.fromEntries(Object.entries(struct.fields ?? {}).map(([k, v]) => [k, value(v)]));
}

/** Timestamp (seconds as a string) → Date. */
export function timestampToDate(ts: { seconds: string; nanos: number } | null): Date | null {
  return ts ? new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)) : null;
}

/** Date → Timestamp. */
export function dateToTimestamp(date: Date): { seconds: string; nanos: number } {
  const ms = date.getTime();
  return { seconds: String(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 };
}

/** A ProcessJobs session: send one request, read its one response (the stream answers in order). */
export function processJobsSession(duplex: grpc.ClientDuplexStream<any, any>): (request: Record<string, unknown>) => Promise<any> {
  const responses: any[] = [];
  const waiting: ((r: any) => void)[] = [];
  duplex.on('data', (r) => (waiting.length ? waiting.shift()!(r) : responses.push(r)));
  return (request) => {
    duplex.write(request);
    return new Promise<any>((resolve) => (responses.length ? resolve(responses.shift()) : waiting.push(resolve)));
  };
}
