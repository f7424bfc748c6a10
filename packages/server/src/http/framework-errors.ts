import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './errors.js';

/**
 * Requests refused before a route runs still get the contract's error body
 * (docs/compatibility.md §1.4): malformed HTTP and oversized headers (Node's parser),
 * unparseable URLs and overlong path parameters (the router), `Expect`
 * values Node answers on its own, and malformed WebSocket handshakes.
 */

/** Fastify `clientErrorHandler`: the HTTP parser refused the request, so we write the bytes ourselves. */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let body = errorBody('BAD_REQUEST', `Malformed HTTP request${err.code ? ` (${err.code})` : ''}`);
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = errorBody('BAD_REQUEST', 'Request headers are too large');
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    body = errorBody('BAD_REQUEST', 'The request was not received in time');
  }
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
  }
  socket.destroy(err);
}

/** Fastify `frameworkErrors`: routing failed before any route matched. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  switch (error.code) {
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // Any string is acceptable as an id; one this long names nothing (docs/compatibility.md §1.2).
      void reply.code(404).send(errorBody('NOT_FOUND', 'Not found: a path segment is longer than 100 characters'));
      return;
    case 'FST_ERR_BAD_URL':
      void reply.code(400).send(errorBody('BAD_REQUEST', 'The URL path is not valid percent-encoded UTF-8'));
      return;
    default:
      void reply.code(400).send(errorBody('BAD_REQUEST', error.message));
  }
}

/** Node answers an unknown `Expect` with a bare 417; answer it with a body instead. */
export function answerExpectations(server: Server): void {
  server.on('checkExpectation', (request, response) => {
    const text = JSON.stringify(errorBody('BAD_REQUEST', `Unsupported Expect header: ${String(request.headers.expect).slice(0, 100)}`));
    response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), connection: 'close' });
    response.end(text);
  });
}

interface HandshakeRefusals {
  on(event: 'wsClientError', listener: (error: Error, socket: Duplex, request: IncomingMessage) => void): unknown;
}

/**
 * The `ws` server refuses malformed WebSocket handshakes (any route can be
 * asked to upgrade) with a text/html 400; answer with the error body
 * instead. 405 for a method other than GET, as `ws` would.
 */
export function answerBadHandshakes(wss: HandshakeRefusals): void {
  wss.on('wsClientError', (error, socket, request) => {
    const status = request.method === 'GET' ? 400 : 405;
    const text = JSON.stringify(errorBody('BAD_REQUEST', `WebSocket handshake refused: ${error.message}`));
    if (socket.writable) {
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
    }
    socket.once('finish', () => socket.destroy());
  });
}
