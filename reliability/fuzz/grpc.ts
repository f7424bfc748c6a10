import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { grpcClient, SDK_LOADER_OPTIONS, toStruct, type Auth } from '../../test-support/grpc.js';
import { NASTY_STRINGS } from './values.js';

/**
 * A light fuzz of the gRPC surface: every unary method of QueueService and
 * WorkerService, with fields generated from the proto's own field list
 * (strings from the nasty list or known ids, edge integers, deep Structs,
 * odd timestamps) and good, bad or missing credentials. An answer is fine
 * when it is OK or a status that names the client's mistake; INTERNAL or
 * UNKNOWN coming from the server is a failure.
 */
const PROTO_PATH = fileURLToPath(new URL('../../packages/server/proto/spooled.proto', import.meta.url));
const CLIENT_MISTAKES = new Set([
  grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND, grpc.status.FAILED_PRECONDITION, grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED, grpc.status.RESOURCE_EXHAUSTED, grpc.status.ALREADY_EXISTS, grpc.status.OUT_OF_RANGE, grpc.status.ABORTED,
]);

interface Field { name: string; type: string; label: string; typeName: string }
interface Method { service: 'queue' | 'workers'; name: string; fields: Field[] }

function unaryMethods(): Method[] {
  const definition = protoLoader.loadSync(PROTO_PATH, SDK_LOADER_OPTIONS);
  const out: Method[] = [];
  for (const [serviceName, service] of [['spooled.v1.QueueService', 'queue'], ['spooled.v1.WorkerService', 'workers']] as const) {
    for (const [name, method] of Object.entries(definition[serviceName] as Record<string, any>)) {
      if (method.requestStream || method.responseStream) continue;
      out.push({ service, name, fields: method.requestType.type.field as Field[] });
    }
  }
  return out;
}

/** A Struct nested `depth` levels, built iteratively (a recursive builder would overflow first). */
const deepStruct = (depth: number): unknown => {
  let struct: Record<string, unknown> = { fields: { leaf: { numberValue: 1 } } };
  for (let i = 0; i < depth; i++) struct = { fields: { a: { structValue: struct } } };
  return struct;
};

function fieldValue(field: Field, ids: () => string[]): fc.Arbitrary<unknown> {
  const one = (): fc.Arbitrary<unknown> => {
    switch (field.type) {
      case 'TYPE_STRING':
        return fc.oneof(fc.constantFrom(...NASTY_STRINGS.filter((s) => s.length < 5000)), fc.string({ maxLength: 30 }), fc.nat().map((n) => ids()[n % Math.max(ids().length, 1)] ?? ''), fc.constant('grpc-fuzz'));
      case 'TYPE_INT32':
      case 'TYPE_INT64':
      case 'TYPE_UINT32':
        return fc.constantFrom(0, -1, 1, 5, 100, 101, 3600, 3601, 2 ** 31 - 1, -(2 ** 31), field.type === 'TYPE_INT64' ? '9223372036854775807' : 7);
      case 'TYPE_BOOL':
        return fc.boolean();
      case 'TYPE_ENUM':
        return fc.constantFrom(0, 1, 2, 3, 99);
      case 'TYPE_MESSAGE':
        if (field.typeName.endsWith('Struct')) {
          return fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 })).map((o) => toStruct(o as Record<string, unknown>)), fc.constantFrom(deepStruct(40), deepStruct(200), deepStruct(2000), { fields: {} }));
        }
        if (field.typeName.endsWith('Timestamp')) return fc.constantFrom({ seconds: '0', nanos: 0 }, { seconds: '-62135596801', nanos: 0 }, { seconds: '253402300800', nanos: 0 }, { seconds: String(Math.floor(Date.now() / 1000) + 60), nanos: 999_999_999 }, { seconds: '1', nanos: -1 });
        return fc.constant({});
      default:
        return fc.constant(undefined);
    }
  };
  return field.label === 'LABEL_REPEATED' ? fc.array(one(), { maxLength: 3 }) : one();
}

export interface GrpcFuzzReport { runs: number; methods: number; codes: Record<string, number>; failures: string[] }

export async function runGrpcFuzz(address: string, apiKey: string, ids: () => string[], options: { runs: number; seed: number }): Promise<GrpcFuzzReport> {
  const methods = unaryMethods();
  const client = grpcClient(address, apiKey);
  const codes: Record<string, number> = {};
  const failures: string[] = [];
  let runs = 0;
  const arbitrary = fc.oneof(...methods.map((method) => fc.record({
    method: fc.constant(method),
    request: fc.record(Object.fromEntries(method.fields.map((f) => [f.name, fieldValue(f, ids)])), { requiredKeys: [] }),
    auth: fc.oneof({ weight: 6, arbitrary: fc.constant<Auth>({ apiKey }) }, { weight: 1, arbitrary: fc.constantFrom<Auth>(null, { apiKey: 'sk_test_junk' }, { bearer: 'eyJhbGciOiJub25lIn0.e30.' }, { bearer: apiKey }) }),
  })));
  try {
    await fc.assert(fc.asyncProperty(arbitrary, async ({ method, request, auth }) => {
      runs += 1;
      let code: number = grpc.status.OK;
      let details = '';
      try {
        await client.call(method.service, method.name, request, auth);
      } catch (err) {
        const e = err as grpc.ServiceError;
        code = e.code;
        details = e.details ?? e.message;
      }
      // Requests this client cannot even encode never reached the server.
      if (/serialization failure|Illegal value|invalid/i.test(details) && code === grpc.status.INTERNAL && /Request message/.test(details)) return true;
      const name = grpc.status[code] ?? String(code);
      codes[name] = (codes[name] ?? 0) + 1;
      if (!CLIENT_MISTAKES.has(code)) failures.push(`${method.name} ${JSON.stringify(request).slice(0, 300)} → ${name}: ${details}`);
      return true;
    }), { numRuns: options.runs, seed: options.seed });
  } finally {
    client.close();
  }
  return { runs, methods: methods.length, codes, failures };
}
