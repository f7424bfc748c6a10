import type { FastifyRequest } from 'fastify';
import { bearer } from '../http/auth.js';

/** Anything realtime that must end when the server stops. */
export interface Closable {
  readonly organizationId: string;
  close(reason?: string): void;
}

/** Open realtime connections of this process, for shutdown and per-organization caps. */
export class ConnectionRegistry {
  readonly #open = new Set<Closable>();

  add(connection: Closable): () => void {
    this.#open.add(connection);
    return () => {
      this.#open.delete(connection);
    };
  }

  count(organizationId: string, kind?: (c: Closable) => boolean): number {
    let n = 0;
    for (const c of this.#open) if (c.organizationId === organizationId && (!kind || kind(c))) n++;
    return n;
  }

  closeAll(reason: string): void {
    for (const c of [...this.#open]) c.close(reason);
    this.#open.clear();
  }
}

/**
 * The credential of a realtime request: `Authorization: Bearer …` (SDK) or
 * `?token=…` (browsers' EventSource and WebSocket cannot set headers).
 */
export function realtimeCredential(request: FastifyRequest): string | null {
  const header = bearer(request);
  if (header) return header;
  const token = (request.query as Record<string, unknown> | undefined)?.token;
  return typeof token === 'string' && token.length > 0 ? token : null;
}
