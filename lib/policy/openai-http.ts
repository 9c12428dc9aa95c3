/**
 * JSON POSTs to an OpenAI-compatible endpoint with the retry behaviour hosted APIs expect:
 * per-attempt timeouts, exponential backoff with jitter on 408/409/429/5xx and network errors,
 * `Retry-After` / `retry-after-ms` honoured, and cancellation through an AbortSignal at any point
 * (also while waiting to retry). Failures are `HttpError`s that never contain the API key: a
 * server (or proxy) may echo the request into its error, so the value of every header not known to
 * be safe is cut out of every message (and of the error's cause) before it is thrown, logged or stored. Bodies are read up to a size cap.
 */
import { AbortError, HttpError, ResponseTooLargeError } from '../errors.js';
import { sleep } from './sleep.js';

export interface HttpOptions {
  fetch: typeof fetch;
  headers: Record<string, string>;
  timeoutMs: number;
  maxRetries: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
  random: () => number;
  /** Largest response body read, in bytes. */
  maxResponseBytes: number;
}

/** The error body OpenAI-compatible servers send. */
export interface ServerError {
  status: number;
  message: string;
  param: string | null;
}

export async function postJson(url: string, body: unknown, http: HttpOptions, signal?: AbortSignal): Promise<unknown> {
  const payload = JSON.stringify(body);
  const redact = redactor(http.headers);
  for (let attempt = 0; ; attempt++) {
    let outcome: Outcome;
    try {
      outcome = await attemptOnce(url, payload, http, signal);
    } catch (error) {
      throw error instanceof HttpError ? redacted(error, redact) : error;
    }
    if ('value' in outcome) return outcome.value;
    if (attempt >= http.maxRetries) throw redacted(outcome.retry, redact);
    const backoff = Math.min(http.maxRetryDelayMs, http.retryDelayMs * 2 ** attempt) * (1 - 0.25 * http.random());
    await sleep(outcome.wait ?? backoff, signal);
  }
}

type Outcome = { value: unknown } | { retry: HttpError; wait?: number };

/** One try: the parsed body, a retryable failure (with the wait the server asked for), or a throw. */
async function attemptOnce(url: string, payload: string, http: HttpOptions, signal?: AbortSignal): Promise<Outcome> {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
  const timeout = AbortSignal.timeout(http.timeoutMs);
  let status: number;
  let headers: Headers;
  let text: string;
  try {
    const response = await http.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...http.headers },
      body: payload,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    ({ status, headers } = response);
    text = await readCapped(response, url, http.maxResponseBytes);
  } catch (error) {
    if (error instanceof ResponseTooLargeError) throw error;
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const message = timeout.aborted
      ? `POST ${url} timed out after ${http.timeoutMs} ms.`
      : `POST ${url} failed: ${(error as Error).message}. Is the server running and the baseURL right?`;
    return { retry: new HttpError(undefined, message, { cause: error }) };
  }
  if (status >= 200 && status < 300) {
    try {
      return { value: JSON.parse(text) };
    } catch {
      throw new HttpError(status, `POST ${url} answered ${status} with a body that is not JSON: ${snippet(text)}`);
    }
  }
  const error = serverError(status, text);
  const failure = new HttpError(status, `POST ${url} failed with ${status}: ${error.message}`, { cause: error });
  if (!RETRYABLE.has(status)) throw failure;
  const wait = retryAfter(headers);
  if (wait !== undefined && wait > http.maxRetryDelayMs) {
    throw new HttpError(status, `${failure.message} (the server asks to wait ${Math.ceil(wait / 1000)} s before retrying, more than maxRetryDelayMs)`, {
      cause: error,
    });
  }
  return wait === undefined ? { retry: failure } : { retry: failure, wait };
}

/** Statuses worth retrying, as the official SDKs do: timeouts, conflicts, rate limits, server errors. */
const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504]);

/** Milliseconds to wait from `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date. */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export function serverError(status: number, text: string): ServerError {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; param?: unknown } | string; message?: unknown };
    const error = body.error;
    if (typeof error === 'string') return { status, message: error, param: null };
    if (error && typeof error.message === 'string') {
      return { status, message: error.message, param: typeof error.param === 'string' ? error.param : null };
    }
    if (typeof body.message === 'string') return { status, message: body.message, param: null };
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return { status, message: snippet(text) || '(empty body)', param: null };
}

/**
 * The body as text, refusing (before reading it all) one over `limit` bytes: a declared
 * `content-length` is checked first, then the bytes as they stream in.
 */
async function readCapped(response: Response, url: string, limit: number): Promise<string> {
  const tooLarge = (size: string) =>
    new ResponseTooLargeError(
      response.status,
      limit,
      `POST ${url} answered ${response.status} with a body of ${size}, over maxResponseBytes (${limit}); ask for fewer or shorter completions, or raise maxResponseBytes.`,
    );
  const declared = Number(response.headers.get('content-length'));
  if (response.headers.has('content-length') && Number.isFinite(declared) && declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(`${declared} bytes`);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = '';
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(`more than ${limit} bytes`);
    }
    text += decoder.decode(chunk.value, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Headers whose values are not credentials; every other header a caller passes is treated as one
 * (gateways name their keys freely: `Ocp-Apim-Subscription-Key`, `X-Goog-Api-Key`, `Helicone-Auth`).
 */
const SAFE_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'user-agent',
  'openai-beta',
  'openai-organization',
  'openai-project',
  'http-referer',
  'x-title',
]);

/** Secrets shorter than this are not cut where they are only part of an encoding (too many false hits). */
const MIN_ENCODED = 8;
/**
 * The part of a secret that is redacted where it appears alone: a server that echoes a key cut
 * short (its first 24 characters) still leaks most of it; 12 characters are too few to appear in
 * ordinary text by chance.
 */
const PREFIX = 12;

/**
 * The spellings of a secret that an echo may carry: itself, URL- and JSON-escaped, hex, its first
 * `PREFIX` characters, and base64
 * (standard and URL-safe) at each of the three byte alignments it can take inside a longer encoded
 * text (`Basic` credentials, a base64 dump of the request), cut to the characters that do not
 * depend on its neighbours.
 */
function spellings(secret: string): string[] {
  const out = [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)];
  if (secret.length < MIN_ENCODED) return out;
  const bytes = new TextEncoder().encode(secret);
  // Hex (any case: the pattern ignores it), and a prefix a server may echo cut short.
  out.push(Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''));
  if (secret.length > PREFIX) out.push(secret.slice(0, PREFIX));
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + bytes.length);
    padded.set(bytes, offset);
    // Whole 3-byte groups only: a partial last group mixes with whatever follows the secret.
    const whole = padded.subarray(0, padded.length - (padded.length % 3));
    const encoded = base64(whole).slice(offset === 0 ? 0 : 4);
    if (encoded.length < MIN_ENCODED) continue;
    out.push(encoded, encoded.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** `btoa` over bytes (it takes one character per byte), in browsers and Node alike. */
function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whitespace and the invisible joiners an echo may put inside a key (a line wrap, `sk-live-0123 4567…`). */
const SPLIT = '[\\s\\u200b-\\u200d\\u2060\\ufeff]*';

/**
 * A spelling as a pattern that also finds it split: any run of whitespace or invisible characters
 * between two of its characters (a key broken in two, hex dumped in pairs, base64 wrapped at 76
 * columns). Its characters still have to appear whole and in order, so ordinary words never match;
 * spellings shorter than `MIN_ENCODED` are matched only as they are, for the same reason.
 */
function splittable(spelling: string): string {
  const chars = Array.from(spelling, escapeRegExp);
  return chars.join(spelling.length < MIN_ENCODED ? '' : SPLIT);
}

/**
 * A function that cuts every credential out of a text: each value of a header not known to be safe,
 * its token without the scheme (`Bearer <key>`), their URL- and JSON-escaped and base64 forms, in
 * any letter case (a server may upper-case what it echoes) and split by whitespace anywhere.
 */
export function redactor(headers: Record<string, string>): (text: string) => string {
  const secrets = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    if (SAFE_HEADERS.has(name.toLowerCase()) || typeof value !== 'string') continue;
    const token = value.replace(/^\s*[A-Za-z]+\s+/, '');
    for (const secret of [value.trim(), token.trim()]) {
      if (secret.length < 4) continue;
      for (const spelling of spellings(secret)) secrets.add(spelling);
    }
  }
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  const pattern = ordered.length > 0 ? new RegExp(ordered.map(splittable).join('|'), 'gi') : undefined;
  return (text) => {
    const out = pattern ? text.replace(pattern, '[redacted]') : text;
    // Whatever else a server echoes after a scheme keyword is a credential too.
    return (
      out
        .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]')
        .replace(/(\/\/)[^/@\s]+@/g, '$1[redacted]@')
        // A URL's query can carry a key (`?api-key=…`): none is written out.
        .replace(/(\bhttps?:\/\/[^\s?#"'<>]*)\?[^\s#"'<>]*/gi, '$1?[redacted]')
    );
  };
}

/**
 * The same error with every text it carries redacted: its message, and its cause (the server's
 * error with its message and param, or the network error's message); nothing else of the cause is kept.
 */
function redacted(error: HttpError, redact: (text: string) => string): HttpError {
  if (error instanceof ResponseTooLargeError) return new ResponseTooLargeError(error.status, error.limit, redact(error.message));
  const cause = error.cause;
  let safeCause: unknown;
  if (cause instanceof Error) {
    // The network error's own cause names the failure (ECONNREFUSED, ENOTFOUND): keep its words too.
    const inner = cause.cause instanceof Error ? ` (${cause.cause.message})` : '';
    safeCause = new Error(redact(cause.message + inner));
  } else if (cause && typeof cause === 'object' && 'param' in cause) {
    const server = cause as ServerError;
    safeCause = { status: server.status, message: redact(server.message), param: server.param === null ? null : redact(server.param) };
  }
  return new HttpError(error.status, redact(error.message), safeCause === undefined ? undefined : { cause: safeCause });
}

function snippet(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}
