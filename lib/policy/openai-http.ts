/**
 * JSON POSTs to an OpenAI-compatible endpoint with the retry behaviour hosted APIs expect:
 * per-attempt timeouts, exponential backoff with jitter on 408/409/429/5xx and network errors,
 * `Retry-After` / `retry-after-ms` honoured, and cancellation through an AbortSignal at any point
 * (also while waiting to retry). Failures are `HttpError`s that never contain the API key.
 */
import { AbortError, HttpError } from '../errors.js';

export interface HttpOptions {
  fetch: typeof fetch;
  headers: Record<string, string>;
  timeoutMs: number;
  maxRetries: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
  random: () => number;
}

/** The error body OpenAI-compatible servers send. */
export interface ServerError {
  status: number;
  message: string;
  param: string | null;
}

export async function postJson(url: string, body: unknown, http: HttpOptions, signal?: AbortSignal): Promise<unknown> {
  const payload = JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    const outcome = await attemptOnce(url, payload, http, signal);
    if ('value' in outcome) return outcome.value;
    if (attempt >= http.maxRetries) throw outcome.retry;
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
    text = await response.text();
  } catch (error) {
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

function snippet(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortError(undefined, { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
