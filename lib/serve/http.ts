/** Small helpers over `node:http`: a bounded JSON body reader and JSON / error / SSE writers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './api-error.js';

/**
 * Past the limit the rest of the body is still read (and dropped), up to this many more bytes:
 * closing a connection the client is still sending on resets it, and the client would see
 * ECONNRESET instead of the 413.
 */
const DISCARD_LIMIT = 64 << 20;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Most bytes of events waiting for a client that does not read them: past it the client is cut
 * off (and its generation cancelled), so slow or stalled readers cannot grow the server's memory.
 */
export const MAX_BUFFERED_EVENTS = 1 << 20;

/** Reads the whole body, refusing (413) past `limit` bytes, and parses it as JSON (400 if it is not). */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  let text: string;
  try {
    // Fatal: invalid UTF-8 is refused, not replaced by U+FFFD and answered as if it had been sent.
    text = UTF8.decode(await readBody(req, limit));
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError(400, 'The request body is not valid UTF-8; send JSON encoded as UTF-8.', { code: 'invalid_json' });
  }
  if (text.trim() === '') throw new ApiError(400, 'The request body is empty; send a JSON object.', { code: 'invalid_json' });
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(400, `The request body is not valid JSON (${(error as Error).message}).`, { code: 'invalid_json' });
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit + DISCARD_LIMIT) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooMuch = Number.isFinite(declared) && declared > limit;
    const done = (error?: unknown) => {
      req.off('data', onData).off('end', onEnd).off('error', done).off('close', onClose);
      if (error) reject(error);
      else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit + DISCARD_LIMIT) return done(tooLarge(limit));
      if (size > limit) tooMuch = true;
      if (tooMuch) chunks.length = 0;
      else chunks.push(chunk);
    };
    const onEnd = () => done(tooMuch ? tooLarge(limit) : undefined);
    const onClose = () => done(new ApiError(400, 'The client closed the connection before the request body ended.', { code: 'incomplete_body' }));
    req.on('data', onData).on('end', onEnd).on('error', done).on('close', onClose);
  });
}

function tooLarge(limit: number): ApiError {
  return new ApiError(413, `The request body is larger than the server's limit of ${limit} bytes.`, { code: 'request_too_large' });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: ApiError): void {
  const headers: Record<string, string> = {};
  if (error.status === 401) headers['www-authenticate'] = 'Bearer';
  if (error.status === 503) headers['retry-after'] = '1';
  if (error.status === 413) headers.connection = 'close';
  sendJson(res, error.status, error, headers);
}

/** Server-sent events as OpenAI streams them: `data: <json>` lines, ended by `data: [DONE]`. */
export class EventStream {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
  }

  send(data: unknown): void {
    if (this.#res.writableEnded || this.#res.destroyed) return;
    this.#res.write(`data: ${JSON.stringify(data)}\n\n`);
    if (this.#res.writableLength > MAX_BUFFERED_EVENTS) this.#res.destroy();
  }

  /** Ends the stream; an error after the headers went out is sent as an event, as OpenAI does. */
  end(error?: ApiError): void {
    if (this.#res.writableEnded || this.#res.destroyed) return;
    if (error) this.send(error);
    this.#res.end('data: [DONE]\n\n');
  }
}
