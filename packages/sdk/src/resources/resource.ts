import type { CallOptions, RequestSpec, Transport } from '../http.js';

/** Encodes one path segment: ids are opaque strings (docs/compatibility.md §1.2). */
export function seg(value: string): string {
  return encodeURIComponent(value);
}

/** The public surface of a resource class, as a plain structural type (fakes can implement it). */
export type Api<T> = Pick<T, keyof T>;

/** Shared base of the resource groups: one transport, call options merged into each request. */
export abstract class Resource {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  protected call<T>(spec: RequestSpec, options?: CallOptions): Promise<T> {
    return this.#transport.request<T>({ ...spec, ...options });
  }

  /** Opens a streaming response (Server-Sent Events), unread. */
  protected open(spec: RequestSpec, options?: CallOptions): Promise<Response> {
    return this.#transport.open({ ...spec, ...options });
  }
}
