/**
 * What the log says about an error: its message and code, and a stack only
 * for errors without a code (programming errors, where the stack is the
 * point). Never the whole object: pg-pool attaches the failed `client` to
 * idle-connection errors, and serializing it dumped connection parameters
 * and every prepared statement's text into the log.
 */
const CONNECTION_LOST = /^Connection terminated|^Client has encountered a connection error|^connect ECONNREFUSED/;

export function errorFields(err: unknown): { message: string; code?: string; stack?: string } {
  if (!(err instanceof Error)) return { message: String(err) };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return { message: err.message, code };
  // pg reports a lost server connection without a code; it is an operational event, not a bug.
  if (CONNECTION_LOST.test(err.message)) return { message: err.message };
  return err.stack ? { message: err.message, stack: err.stack } : { message: err.message };
}
