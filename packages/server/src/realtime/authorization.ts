import { authorize, LiveAuthorization, type Grant, type Operation } from '../authorization.js';
import { authenticate, type AuthContext, type AuthServices } from '../http/auth.js';
import type { RealtimeEvent } from './events.js';

/** How often an open stream reads its key again: a revoked key's streams close, a narrowed key's events narrow. */
const REREAD_MS = 5_000;

/**
 * A realtime connection's authorization: `operation` authorized at open, the
 * key read again every REREAD_MS while the connection lasts (the connection
 * closes when it stops authenticating or loses the operation), and each
 * event shown only when its queue is within the key's reach as last read.
 */
export class RealtimeAuthorization {
  readonly #live: LiveAuthorization;
  #grant: Grant;

  private constructor(live: LiveAuthorization, readonly operation: Operation) {
    this.#live = live;
    this.#grant = authorize(live.last, operation);
  }

  /** Authenticates and authorizes a new connection (throws 401/403 before anything is sent). */
  static async open(services: AuthServices, credential: string | null, operation: Operation): Promise<RealtimeAuthorization> {
    const auth = await authenticate(services, credential);
    return new RealtimeAuthorization(new LiveAuthorization(auth, () => authenticate(services, credential)), operation);
  }

  get auth(): AuthContext {
    return this.#live.last;
  }

  get grant(): Grant {
    return this.#grant;
  }

  /**
   * Reads the key again every REREAD_MS; `close` is called once it is
   * revoked, expired or no longer allowed the operation. Returns the stop function.
   */
  watch(close: (reason: string) => void): () => void {
    const timer = setInterval(() => {
      this.#live.current().then(
        (auth) => {
          this.#grant = authorize(auth, this.operation);
        },
        (err: unknown) => {
          clearInterval(timer);
          close(err instanceof Error ? err.message : 'credential no longer valid');
        },
      ).catch((err: unknown) => {
        clearInterval(timer);
        close(err instanceof Error ? err.message : 'access denied');
      });
    }, REREAD_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * Whether the key may see `event`: events of a queue need that queue;
   * events of no queue (workers without one, system) only a key with every queue.
   */
  visible(event: Pick<RealtimeEvent, 'queueName'>): boolean {
    return event.queueName === '' ? this.#grant.unrestricted : this.#grant.allows(event.queueName);
  }
}
