import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { newId } from '../ids';
import { ApiError } from '../errors';

/** What Node's HTTP parser refuses before Express sees a request, as SPEC §3 error objects. */
function parserError(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'invalid_request_error', 'headers_too_large', 'The request headers are too large (16 KiB at most).');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'invalid_request_error', 'request_timeout', 'The request did not arrive in time.');
    default:
      return new ApiError(
        400,
        'invalid_request_error',
        'malformed_request',
        'The request is not well-formed HTTP/1.1 (request line, header names or values, or framing).',
      );
  }
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Answers the HTTP parser's refusals (oversized headers, control characters in a header, a bad request line)
 * with the JSON error object and a request id instead of Node's empty-bodied default, then closes the
 * connection: after a framing error nothing more on it can be trusted.
 */
export function answerParserErrors(server: Server, log: Logger): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    // Node's own rule: write only when no response is under way on this socket, or it would corrupt it.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = newId('req');
    const apiError = parserError(error.code);
    log.info(
      { req: { id: requestId }, res: { statusCode: apiError.status }, parser_error: error.code },
      'request refused by the HTTP parser',
    );
    const body = JSON.stringify(apiError.toBody(requestId));
    socket.end(
      `HTTP/1.1 ${apiError.status} ${REASONS[apiError.status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
