/** What every command needs: the client built from the global options, and how to print. */
import { InvalidArgumentError, type Command } from 'commander';
import {
  AuthenticationError,
  AuthorizationError,
  SpoolApiError,
  SpoolClient,
  SpoolNetworkError,
  SpoolTimeoutError,
} from '@spool/sdk';
import { json, Progress } from './output.js';

export const DEFAULT_URL = 'http://localhost:8080';

export interface GlobalOptions {
  url: string;
  apiKey?: string;
  json?: boolean;
  progress?: boolean;
}

export interface Context {
  client: SpoolClient;
  options: GlobalOptions;
  /** Prints `value` as JSON with `--json`, else the human text. */
  print(value: unknown, human: () => string): void;
  /** A progress bar on stderr: drawn when stderr is a terminal, or always with --progress. */
  progress(total: number | null): Progress;
}

/** The command ran but did not do what was asked (e.g. a job that was not dead-lettered): exit code 1. */
export class CommandFailed extends Error {
  readonly code: string;
  readonly details: unknown;
  readonly hint: string | undefined;

  constructor(code: string, message: string, details?: unknown, hint?: string) {
    super(message);
    this.name = 'CommandFailed';
    this.code = code;
    this.details = details;
    this.hint = hint;
  }
}

/** A mistake in how the command was called: exit code 2, no stack. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The server URL from --url / SPOOL_URL, refused as a usage error when it cannot be one. */
export function serverUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url / SPOOL_URL is not a URL: "${raw}" (expected something like ${DEFAULT_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url / SPOOL_URL must be an http:// or https:// URL, got "${raw}"`);
  return raw;
}

export function contextFor(command: Command): Context {
  const options = command.optsWithGlobals<GlobalOptions>();
  serverUrl(options.url);
  const client = new SpoolClient({ baseUrl: options.url, apiKey: options.apiKey, retry: { maxRetries: 2, baseDelayMs: 200 } });
  return {
    client,
    options,
    print(value, human) {
      process.stdout.write(`${options.json ? json(value) : human()}\n`);
    },
    progress(total) {
      return new Progress(total, options.progress === true || Boolean(process.stderr.isTTY));
    },
  };
}

/**
 * A failure as `--json` prints it on stderr: the API's error shape (`code`, `message`, `details`),
 * plus the HTTP `status`, `request_id` and the `hint` when there is one.
 */
export function errorJson(err: unknown, explained: { message: string; hint?: string; exitCode: number }): Record<string, unknown> {
  const out: Record<string, unknown> = { code: 'ERROR', message: err instanceof Error ? err.message : String(err), details: null };
  if (err instanceof SpoolApiError) {
    Object.assign(out, { code: err.code, details: err.details ?? null, status: err.status, request_id: err.requestId ?? null });
  } else if (err instanceof SpoolNetworkError) {
    Object.assign(out, { code: 'NETWORK_ERROR', message: explained.message, details: { cause: err.code ?? null } });
  } else if (err instanceof SpoolTimeoutError) {
    Object.assign(out, { code: 'TIMEOUT', message: explained.message });
  } else if (err instanceof UsageError) {
    out.code = 'USAGE_ERROR';
  } else if (err instanceof CommandFailed) {
    Object.assign(out, { code: err.code, details: err.details ?? null });
  }
  if (explained.hint) out.hint = explained.hint;
  return out;
}

/** The message and hint for a failed command, and its exit code. */
export function explain(err: unknown, options: Partial<GlobalOptions>): { message: string; hint?: string; exitCode: number } {
  const url = options.url ?? DEFAULT_URL;
  if (err instanceof UsageError) return { message: err.message, exitCode: 2 };
  if (err instanceof CommandFailed) return { message: err.message, hint: err.hint, exitCode: 1 };
  if (err instanceof SpoolNetworkError) {
    if (err.code === 'ECONNREFUSED') {
      return {
        message: `cannot connect to Spool at ${url} (connection refused)`,
        hint: 'Is Spool running? Start it with `npm start` (or `spool start`), or point --url / SPOOL_URL at your server.',
        exitCode: 1,
      };
    }
    if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') {
      return { message: `cannot resolve the host of ${url}`, hint: 'Check --url / SPOOL_URL.', exitCode: 1 };
    }
    return { message: err.message, hint: 'Check that Spool is running and reachable at --url / SPOOL_URL.', exitCode: 1 };
  }
  if (err instanceof SpoolTimeoutError) return { message: `Spool at ${url} did not answer in time`, hint: 'Is the server overloaded or the URL pointing at the wrong service?', exitCode: 1 };
  if (err instanceof AuthenticationError) {
    const hint = options.apiKey
      ? 'The API key was refused. Check --api-key / SPOOL_API_KEY (a development key is printed when Spool first starts).'
      : 'No API key given. Pass --api-key or set SPOOL_API_KEY (a development key is printed when Spool first starts).';
    return { message: `${err.message} (401)`, hint, exitCode: 1 };
  }
  if (err instanceof AuthorizationError) return { message: `${err.message} (403)`, hint: 'The API key may be restricted to other queues, or a plan limit was reached.', exitCode: 1 };
  if (err instanceof SpoolApiError) {
    const id = err.requestId ? `, request ${err.requestId}` : '';
    const message = `${err.message} (${err.status} ${err.code}${id})`;
    // Spool answers every error with JSON; a text or HTML answer, or an unknown route, means --url points elsewhere.
    if (typeof err.body === 'string' || (err.status === 404 && /^Route \S+ \S+ not found/.test(err.message))) {
      const path = new URL(url).pathname.replace(/\/+$/, '');
      const hint = path
        ? `--url should be the server's root URL (like ${DEFAULT_URL}), without "${path}".`
        : `Is ${url} a Spool server? Check --url / SPOOL_URL.`;
      return { message, hint, exitCode: 1 };
    }
    return { message, exitCode: 1 };
  }
  return { message: err instanceof Error ? err.message : String(err), exitCode: 1 };
}

/** Parses JSON given on the command line, naming the option when it is not valid. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

/** An option parser for an integer within bounds (commander reports the failure as a usage error). */
export function intIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`Expected an integer between ${min} and ${max}.`);
    return n;
  };
}
