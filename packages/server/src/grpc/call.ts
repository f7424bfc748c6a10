import type { Metadata, sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import type { AppContext } from '../app.js';
import { authorize, LiveAuthorization, type Grant, type Operation } from '../authorization.js';
import { canonicalId } from '@spool/engine';
import { authenticate, type AuthContext } from '../http/auth.js';
import { toGrpcFailure, toServiceError } from './errors.js';

/** What the gRPC services need: the REST handlers' context (same pool, auth, claim waiters, group commit), plus shutdown. */
export interface GrpcContext extends AppContext {
  /** Aborted when the server begins to shut down: streams end cleanly at their next step. */
  shutdown: AbortSignal;
}

/** The first value of a metadata key, as text (null when absent). */
export function first(metadata: Metadata, key: string): string | null {
  const value = metadata.get(key)[0];
  if (value === undefined) return null;
  return typeof value === 'string' ? value : value.toString('utf8');
}

/** A call's `traceparent`/`tracestate` metadata as header-like values (undefined when absent). */
export function traceMetadata(metadata: Metadata): { traceparent?: string; tracestate?: string } {
  const traceparent = first(metadata, 'traceparent');
  const tracestate = metadata.get('tracestate').map((value) => (typeof value === 'string' ? value : value.toString('utf8'))).join(',');
  return { traceparent: traceparent ?? undefined, tracestate: tracestate === '' ? undefined : tracestate };
}

/** The credential of a call: `x-api-key`, else `authorization: Bearer <key or access token>`. */
export function credentialFrom(metadata: Metadata): string | null {
  const apiKey = first(metadata, 'x-api-key')?.trim();
  if (apiKey) return apiKey;
  const header = first(metadata, 'authorization');
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1]! : null;
}

/** Authenticates a call exactly as REST authenticates a request (same keys, tokens and tenancy). */
export function authenticateCall(ctx: GrpcContext, metadata: Metadata): Promise<AuthContext> {
  return authenticate(ctx, credentialFrom(metadata));
}

/** A streaming call's authorization: the key is read again while the stream lasts (authorization.ts). */
export async function authorizeStream(ctx: GrpcContext, metadata: Metadata): Promise<LiveAuthorization> {
  const credential = credentialFrom(metadata);
  return new LiveAuthorization(await authenticate(ctx, credential), () => authenticate(ctx, credential));
}

/** Id fields of the spooled.v1 requests; `worker_id` is free text and stays as sent. */
const ID_FIELDS = ['job_id', 'lease_id', 'parent_job_id'] as const;

/** One spelling of each id before any handler sees the request (engine ids.ts, canonicalId). */
export function canonicalizeCallIds<Req>(request: Req): Req {
  if (request === null || typeof request !== 'object') return request;
  const fields = request as Record<string, unknown>;
  for (const key of ID_FIELDS) if (typeof fields[key] === 'string') fields[key] = canonicalId(fields[key]);
  return request;
}

/**
 * A unary handler that authenticates, authorizes `operation` (the same
 * decision as REST's), runs `handler` and maps any thrown error to a status.
 */
export function unary<Req, Res>(
  ctx: GrpcContext,
  method: string,
  operation: Operation,
  handler: (grant: Grant, request: Req, metadata: Metadata, call: ServerUnaryCall<Req, Res>) => Promise<Res>,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    authenticateCall(ctx, call.metadata)
      .then((auth) => handler(authorize(auth, operation), canonicalizeCallIds(call.request), call.metadata, call))
      .then(
        (response) => callback(null, response),
        (err: unknown) => callback(toServiceError(toGrpcFailure(err, ctx.logger, method))),
      );
  };
}
