import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { guardedLookup, parseWebhookUrl, targetRefusal, type WebhookPolicy } from './ssrf.js';

export interface WebhookRequest {
  url: string;
  /** The exact bytes sent (and signed). */
  body: string;
  event: string;
  attempt: number;
  secret?: string | null;
  deliveryId?: string | null;
  policy: WebhookPolicy;
  timeoutMs?: number;
  /** W3C trace context of the delivery's span, sent as `traceparent`/`tracestate` (only while the server traces). */
  trace?: { traceparent: string; tracestate: string | null } | null;
}

export interface WebhookResponse {
  success: boolean;
  statusCode: number | null;
  /** First 500 characters. */
  responseBody: string | null;
  error: string | null;
  durationMs: number;
  /** Retrying cannot help (e.g. the URL is refused). */
  permanent: boolean;
}

/** `sha256=` + hex HMAC-SHA256(secret, "<timestamp>.<body>") (docs/compatibility.md §3.11). */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The headers of every outgoing webhook request. */
export function webhookHeaders(request: Pick<WebhookRequest, 'body' | 'event' | 'attempt' | 'secret' | 'deliveryId' | 'trace'>, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Spool-Webhooks/1',
    'x-spooled-event': request.event,
    'x-spooled-timestamp': String(timestamp),
    'x-spooled-delivery-attempt': String(request.attempt),
    'content-length': String(Buffer.byteLength(request.body)),
  };
  if (request.deliveryId) headers['x-spooled-delivery-id'] = request.deliveryId;
  if (request.secret) headers['x-spooled-signature'] = signWebhook(request.secret, timestamp, request.body);
  if (request.trace) {
    headers.traceparent = request.trace.traceparent;
    if (request.trace.tracestate) headers.tracestate = request.trace.tracestate;
  }
  return headers;
}

/**
 * POSTs one webhook with a timeout (10 s by default). Never throws: the
 * outcome says what happened. The connection goes only to addresses the
 * policy allows (checked on the resolved addresses themselves). Redirects
 * are not followed: a 3xx is the answer (a failure), so a redirect cannot
 * lead a delivery anywhere the policy would refuse.
 */
export function sendWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const started = Date.now();
  const done = (partial: Partial<WebhookResponse>): WebhookResponse => ({
    success: false, statusCode: null, responseBody: null, error: null, permanent: false, ...partial, durationMs: Date.now() - started,
  });
  let url: URL;
  try {
    url = parseWebhookUrl(request.url);
  } catch (err) {
    return Promise.resolve(done({ error: (err as Error).message, permanent: true }));
  }
  // Judges IP literals (Node does not call `lookup` for them), names and the scheme; guardedLookup then judges what a name resolves to.
  const refusal = targetRefusal(url, null, request.policy);
  if (refusal) return Promise.resolve(done({ error: refusal, permanent: true }));
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = client.request(url, {
      method: 'POST',
      headers: webhookHeaders(request),
      agent: false,
      lookup: guardedLookup(url, request.policy),
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < 500) text += chunk;
        else res.destroy();
      });
      const end = () => {
        const status = res.statusCode ?? 0;
        const ok = status >= 200 && status < 300;
        finish(done({ success: ok, statusCode: status, responseBody: text.slice(0, 500), error: ok ? null : `HTTP ${status}` }));
      };
      res.on('end', end);
      res.on('close', end);
      res.on('error', end);
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`Timed out after ${request.timeoutMs ?? 10_000} ms`));
    }, request.timeoutMs ?? 10_000);
    req.on('error', (err: NodeJS.ErrnoException) => {
      finish(done({ error: err.message, permanent: err.code === 'ESSRF' }));
    });
    req.end(request.body);
  });
}
