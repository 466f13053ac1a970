import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { newId } from '../ids';
import { ApiError } from '../errors';

/**
 * Answers Node's HTTP server would give by itself, before Express sees a request, with empty bodies: the
 * parser's refusals, an unknown `Expect`, CONNECT, a missing Host. Each becomes the SPEC §3 error object
 * with a request id.
 */

function malformed(message: string): ApiError {
  return new ApiError({ status: 400, type: 'invalid_request_error', code: 'malformed_request', message });
}

/** What Node's HTTP parser refuses, by its error code. */
function parserError(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError({
        status: 431,
        type: 'invalid_request_error',
        code: 'headers_too_large',
        message: 'The request headers are too large (16 KiB at most).',
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError({
        status: 408,
        type: 'invalid_request_error',
        code: 'request_timeout',
        message: 'The request did not arrive in time.',
      });
    default:
      return malformed('The request is not well-formed HTTP/1.1 (request line, header names or values, or framing).');
  }
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  417: 'Expectation Failed',
  431: 'Request Header Fields Too Large',
};

/** A whole HTTP/1.1 response as bytes, for sockets no ServerResponse owns; the connection closes after it. */
function rawResponse(error: ApiError, requestId: string): string {
  const body = JSON.stringify(error.toBody(requestId));
  return (
    `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Installs the answers on `server`. After a framing error nothing more on the connection can be trusted, so
 * those answers close it.
 */
export function answerParserErrors(server: Server, log: Logger): void {
  const refused = (requestId: string, error: ApiError, detail: Record<string, unknown>) =>
    log.info({ req: { id: requestId }, res: { statusCode: error.status }, ...detail }, 'request refused by the HTTP server');

  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    // Node's own rule: write only when no response is under way on this socket, or it would corrupt it.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = newId('req');
    const apiError = parserError(error.code);
    refused(requestId, apiError, { parser_error: error.code });
    socket.end(rawResponse(apiError, requestId));
  });

  // Without a listener Node drops a CONNECT's connection without a word: this server is no proxy.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const requestId = newId('req');
    const apiError = malformed('CONNECT is not supported: this server is not a proxy.');
    refused(requestId, apiError, { method: 'CONNECT' });
    socket.end(rawResponse(apiError, requestId));
  });

  // Any Expect but 100-continue: Node would answer 417 with an empty body.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const requestId = newId('req');
    const apiError = new ApiError({
      status: 417,
      type: 'invalid_request_error',
      code: 'expectation_failed',
      message: 'Only `Expect: 100-continue` is supported.',
    });
    refused(requestId, apiError, { expect: req.headers.expect });
    const body = JSON.stringify(apiError.toBody(requestId));
    res.writeHead(417, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': requestId,
      Connection: 'close',
    });
    res.end(body);
  });

  // Node's own check answers an HTTP/1.1 request without Host with an empty 400; requireHost does it instead.
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
}

/** RFC 9112 §3.2: an HTTP/1.1 request without a Host header is a 400, here the error object. */
export function requireHost(req: Request, _res: Response, next: NextFunction): void {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    next(malformed('An HTTP/1.1 request must carry a Host header.'));
    return;
  }
  next();
}
