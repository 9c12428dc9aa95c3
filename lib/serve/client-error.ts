/**
 * Requests Node's HTTP parser refuses before any handler runs (a bad Content-Length, both
 * Content-Length and Transfer-Encoding, obs-fold, a NUL in a header, headers past the size limit,
 * an unknown method, an HTTP/2 preface): answered with the same OpenAI-shaped JSON error as every
 * other refusal, instead of the bare `400 Bad Request` Node writes, then the connection closes.
 */
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { ApiError } from './api-error.js';

interface ParserError extends Error {
  code?: string;
  reason?: string;
}

function apiErrorFor(error: ParserError): ApiError {
  // A request line ended by a bare LF (or CR) is malformed, not of another HTTP version.
  if (error.code === 'HPE_INVALID_VERSION' && /CRLF|\bCR\b|\bLF\b/.test(error.reason ?? '')) error = { ...error, code: 'HPE_CR_EXPECTED' };
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'The request headers are larger than the server accepts; send fewer or shorter headers.', {
        code: 'headers_too_large',
      });
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError(413, 'The chunk extensions of the request body are larger than the server accepts.', { code: 'request_too_large' });
    case 'HPE_INVALID_METHOD':
      return new ApiError(501, 'The request method is not one this server implements; use GET, HEAD, POST or OPTIONS over HTTP/1.1.', {
        code: 'method_not_implemented',
      });
    case 'HPE_INVALID_VERSION':
    case 'HPE_PAUSED_H2_UPGRADE':
      return new ApiError(505, 'The HTTP version is not supported; send HTTP/1.1 (or HTTP/1.0), not HTTP/2 or later.', { code: 'http_version_not_supported' });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return new ApiError(408, 'The request did not arrive in time; send it again.', { code: 'request_timeout' });
    default:
      return new ApiError(400, `The request is not valid HTTP/1.1 (${describe(error.code)}); check its request line and headers.`, {
        code: 'malformed_request',
      });
  }
}

/** What the parser objected to, in words (its codes name the rule broken, never the request's bytes). */
function describe(code: string | undefined): string {
  if (!code?.startsWith('HPE_')) return 'unreadable';
  return code.slice(4).toLowerCase().replace(/_/g, ' ');
}

/** The `clientError` listener of the server. */
export function answerClientError(error: ParserError, socket: Duplex): void {
  // Nothing can be answered on a connection the client already reset, nor in the middle of a response.
  const busy = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (error.code === 'ECONNRESET' || !socket.writable || busy) {
    socket.destroy();
    return;
  }
  const apiError = apiErrorFor(error);
  const body = JSON.stringify(apiError);
  socket.end(
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
}
