/**
 * A `Policy` over any OpenAI-compatible endpoint (hosted APIs, vLLM, SGLang, llama.cpp server,
 * Ollama, `webgrpo serve`), on plain `fetch`: rollouts on a cluster, the GRPO loop in the tab.
 *
 * - Groups use `n`; a server that returns fewer choices is asked again for the rest (seeds `seed`,
 *   `seed + 1`, ...), with `n` again, so a short answer (a busy server, a per-call cap) never turns
 *   `n` off. One that rejects `n` is asked once per completion, and probed with `n` again every
 *   `N_PROBE_GROUPS` groups (a proxy's limit can be lifted, or the request routed elsewhere).
 * - Log-probs are asked for and used when offered; a server that rejects them is asked without.
 * - With `extensions: true` (vLLM and `webgrpo serve`), `top_k` and `min_p` are sent and token ids
 *   come back, so `tokenIds` and `topLogprobs` are filled; otherwise `tokenIds` is empty, and
 *   `topK` / `minP` are refused rather than silently ignored.
 * - The API key lives in this closure only: never in `info`, errors or anything serialisable.
 */
import { HttpError, InvalidInputError, UnsupportedError } from '../errors.js';
import type { ResponseFormat, Completion, FinishReason, GenerateGroupOptions, GroupResult, Policy, TopLogprob } from '../core/policy.js';
import { postJson, type HttpOptions } from './openai-http.js';

export interface OpenAiPolicyOptions {
  /** Base URL including the version path, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer <apiKey>`; kept in memory only. */
  apiKey?: string;
  model: string;
  /** `chat` (/chat/completions), `completions` (/completions), or by input (default): messages to chat, prompt to completions. */
  endpoint?: 'auto' | 'chat' | 'completions';
  /** Send vLLM's extensions (`top_k`, `min_p`, token ids). Default false (plain OpenAI). */
  extensions?: boolean;
  /** Ask for log-probs. Default true. */
  logprobs?: boolean;
  /** Field for the token limit. Default `max_tokens` (the widest supported); newer OpenAI models want `max_completion_tokens`. */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
  /** Extra request headers (for example an organisation). */
  headers?: Record<string, string>;
  /** Per attempt. Default 120 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on 408/409/429/5xx and network errors. Default 3. */
  maxRetries?: number;
  /** First backoff; doubles per retry, with jitter. Default 500 ms. */
  retryDelayMs?: number;
  /** Longest wait between attempts, `Retry-After` included. Default 30 s. */
  maxRetryDelayMs?: number;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Jitter source in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Largest response body read, in bytes; a larger one is a `ResponseTooLargeError`. Default 64 MiB. */
  maxResponseBytes?: number;
  /**
   * Whether the server honours `response_format` on chat completions (OpenAI, vLLM, and webgrpo serve
   * where its `/v1/models` lists it). Default false: a server without it answers 400, so it is opt-in.
   */
  responseFormats?: boolean;
}

/**
 * The base URL: http(s), with no query, fragment or user part. A key belongs in `apiKey` (the
 * Authorization header): one in the URL would be written wherever the URL is (errors, a run's
 * record, exports), and the endpoint path is appended to the base, so a query there never works.
 * The message never repeats the URL, which may hold the key.
 */
function checkBaseUrl(baseURL: unknown): void {
  const example = 'such as http://127.0.0.1:8000/v1';
  if (typeof baseURL !== 'string' || !/^https?:\/\//i.test(baseURL)) throw new InvalidInputError('baseURL', `must be an http(s) URL ${example}.`);
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    throw new InvalidInputError('baseURL', `is not a valid URL; give one ${example}.`);
  }
  if (url.search !== '' || baseURL.includes('?')) {
    throw new InvalidInputError('baseURL', 'has a query string; the endpoint path is appended to the base URL, so a query there never works, and a key belongs in apiKey (sent as the Authorization header), never in the URL.');
  }
  if (url.hash !== '' || baseURL.includes('#')) throw new InvalidInputError('baseURL', `has a fragment (#…); give the base URL alone, ${example}.`);
  if (url.username !== '' || url.password !== '') {
    throw new InvalidInputError('baseURL', 'holds credentials (user:password@); put the key in apiKey (sent as the Authorization header), never in the URL.');
  }
}

/** Groups asked one completion per call after a server rejected `n`, before `n` is tried again. */
export const N_PROBE_GROUPS = 16;

/** A `Policy` that samples each group from an OpenAI-compatible endpoint (its `/chat/completions` or `/completions`, under `baseURL`). */
export function openAiPolicy(options: OpenAiPolicyOptions): Policy {
  checkBaseUrl(options?.baseURL);
  if (typeof options.model !== 'string' || options.model === '') throw new InvalidInputError('model', 'must name the model to call.');
  const base = options.baseURL.replace(/\/+$/, '');
  const extensions = options.extensions ?? false;
  const responseFormats = options.responseFormats ?? false;
  const http = httpOptions(options);
  const learnt: Learnt = { nativeN: true, groupsWithoutN: 0, logprobs: options.logprobs ?? true };

  async function generateGroup(o: GenerateGroupOptions): Promise<GroupResult> {
    validate(o, extensions);
    if (!learnt.nativeN && ++learnt.groupsWithoutN > N_PROBE_GROUPS) learnt.nativeN = true;
    const chat = options.endpoint === 'chat' || (options.endpoint !== 'completions' && o.messages !== undefined);
    if (chat && o.messages === undefined) throw new InvalidInputError('messages', 'the chat endpoint needs messages, not a prompt.');
    if (!chat && o.prompt === undefined) throw new InvalidInputError('prompt', 'the completions endpoint needs a prompt, not messages.');
    if (o.responseFormat !== undefined) checkResponseFormat(o.responseFormat, chat, responseFormats);
    const completions: Completion[] = [];
    let promptTokens = 0;
    let completionTokens = 0;
    let promptTokenIds: number[] = [];
    for (let call = 0; completions.length < o.groupSize; call++) {
      const n = learnt.nativeN ? o.groupSize - completions.length : 1;
      const seed = o.seed === undefined ? undefined : o.seed + call;
      let response: ApiResponse;
      try {
        response = (await postJson(`${base}${chat ? '/chat/completions' : '/completions'}`, requestBody(options, o, chat, n, seed, learnt.logprobs), http, o.signal)) as ApiResponse;
      } catch (error) {
        if (!learnFrom(error, learnt, n)) throw error;
        call--;
        continue;
      }
      const choices = Array.isArray(response?.choices) ? response.choices : [];
      if (choices.length === 0) throw new HttpError(200, `The server returned no choices for ${options.model}.`);
      choices.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      for (const choice of choices.slice(0, o.groupSize - completions.length)) completions.push(toCompletion(choice, chat, o));
      promptTokens ||= response.usage?.prompt_tokens ?? 0;
      completionTokens += response.usage?.completion_tokens ?? 0;
      if (Array.isArray(response.prompt_token_ids)) promptTokenIds = response.prompt_token_ids;
    }
    return { promptTokenIds, completions, usage: { promptTokens, completionTokens } };
  }

  return {
    info: { model: options.model, backend: 'http', note: `OpenAI-compatible endpoint ${new URL(base).origin}`, responseFormats },
    generateGroup,
    async dispose() {
      // Nothing is held between calls.
    },
  };
}

function httpOptions(options: OpenAiPolicyOptions): HttpOptions {
  return {
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    headers: { ...options.headers, ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
    timeoutMs: options.timeoutMs ?? 120_000,
    maxRetries: options.maxRetries ?? 3,
    retryDelayMs: options.retryDelayMs ?? 500,
    maxRetryDelayMs: options.maxRetryDelayMs ?? 30_000,
    random: options.random ?? Math.random,
    maxResponseBytes: positiveInteger(options.maxResponseBytes ?? 64 << 20, 'maxResponseBytes'),
  };
}

/** What this server turned out to support, learnt from its 400s. */
interface Learnt {
  nativeN: boolean;
  /** Groups asked one completion per call since `n` was rejected. */
  groupsWithoutN: number;
  logprobs: boolean;
}

/** Whether a failed call was a 400 rejecting `n` (with n > 1) or `logprobs`, now learnt, so the call is worth repeating without it. */
function learnFrom(error: unknown, learnt: Learnt, n: number): boolean {
  const param = error instanceof HttpError && error.status === 400 ? rejectedParam(error) : null;
  if (param === 'n' && learnt.nativeN && n > 1) {
    learnt.nativeN = false;
    learnt.groupsWithoutN = 0;
    return true;
  }
  if (param === 'logprobs' && learnt.logprobs) {
    learnt.logprobs = false;
    return true;
  }
  return false;
}

function requestBody(options: OpenAiPolicyOptions, o: GenerateGroupOptions, chat: boolean, n: number, seed: number | undefined, withLogprobs: boolean) {
  const body: Record<string, unknown> = { model: options.model, n, [options.maxTokensField ?? 'max_tokens']: o.maxNewTokens };
  if (chat) body.messages = o.messages;
  else body.prompt = o.prompt;
  if (o.temperature !== undefined) body.temperature = o.temperature;
  if (o.topP !== undefined && o.topP < 1) body.top_p = o.topP;
  if (seed !== undefined) body.seed = seed;
  if (o.stop?.length) body.stop = o.stop;
  if (o.responseFormat?.type === 'json_object') body.response_format = { type: 'json_object' };
  else if (o.responseFormat?.type === 'json_schema') {
    body.response_format = { type: 'json_schema', json_schema: { name: 'response', schema: o.responseFormat.schema, strict: true } };
  }
  const top = o.topLogprobs ?? 0;
  if (withLogprobs) {
    if (chat) {
      body.logprobs = true;
      if (top > 0) body.top_logprobs = top;
    } else {
      body.logprobs = top;
    }
  }
  if (options.extensions ?? false) {
    if (o.topK) body.top_k = o.topK;
    if (o.minP) body.min_p = o.minP;
    body.return_token_ids = true;
    if (withLogprobs) body.return_tokens_as_token_ids = true;
  }
  return body;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new InvalidInputError(name, `must be a positive integer, got ${value}.`);
  return value;
}

/** OpenAI's `response_format` takes JSON formats, on chat completions only. */
function checkResponseFormat(format: ResponseFormat, chat: boolean, supported: boolean): void {
  if (!supported) throw new UnsupportedError('responseFormat: this endpoint was configured without response_format support; pass responseFormats: true for a server that has it.');
  if (!chat) throw new UnsupportedError('responseFormat: OpenAI\'s response_format exists on the chat endpoint only; send messages.');
  if (format.type !== 'json_schema' && format.type !== 'json_object') {
    throw new UnsupportedError(`responseFormat: OpenAI's response_format has no ${JSON.stringify(format.type)} type; use json_schema or json_object.`);
  }
}

function validate(o: GenerateGroupOptions, extensions: boolean): void {
  if (!Number.isInteger(o.groupSize) || o.groupSize < 1) throw new InvalidInputError('groupSize', `must be a positive integer, got ${o.groupSize}.`);
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 1) {
    throw new InvalidInputError('maxNewTokens', `must be a positive integer, got ${o.maxNewTokens}.`);
  }
  if ((o.prompt === undefined) === (o.messages === undefined)) throw new InvalidInputError('prompt', 'give exactly one of prompt or messages.');
  if (!extensions && ((o.topK ?? 0) > 0 || (o.minP ?? 0) > 0)) {
    throw new InvalidInputError(
      o.topK ? 'topK' : 'minP',
      'the OpenAI API has no top_k/min_p; set extensions: true for servers that take them (vLLM, webgrpo serve), or leave it unset.',
    );
  }
}

/** Which request field a 400 blames, from its `param` or its message. */
function rejectedParam(error: HttpError): 'n' | 'logprobs' | null {
  const cause = error.cause as { param?: string | null; message?: string } | undefined;
  const param = cause?.param ?? '';
  const message = cause?.message ?? '';
  if (param === 'n' || /\bn\b.*(not supported|must be 1|unsupported)|only n\s*=\s*1/i.test(message)) return 'n';
  if (/logprobs/.test(param) || /logprobs/i.test(message)) return 'logprobs';
  return null;
}

interface ApiLogprob {
  token: string;
  logprob: number;
  top_logprobs?: { token: string; logprob: number }[];
}

interface ApiChoice {
  index?: number;
  message?: { content?: string | null };
  text?: string;
  finish_reason?: string | null;
  stop_reason?: string | number | null;
  token_ids?: number[];
  logprobs?: {
    content?: ApiLogprob[] | null;
    tokens?: string[];
    token_logprobs?: (number | null)[];
    top_logprobs?: Record<string, number>[] | null;
  } | null;
}

interface ApiResponse {
  choices?: ApiChoice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  prompt_token_ids?: number[];
}

function toCompletion(choice: ApiChoice, chat: boolean, o: GenerateGroupOptions): Completion {
  const text = (chat ? choice.message?.content : choice.text) ?? '';
  let tokens: string[] = [];
  let logprobs: number[] = [];
  let alternatives: { token: string; logprob: number }[][] | undefined;
  if (chat && choice.logprobs?.content) {
    tokens = choice.logprobs.content.map((t) => t.token);
    logprobs = choice.logprobs.content.map((t) => t.logprob);
    alternatives = choice.logprobs.content.map((t) => t.top_logprobs ?? []);
  } else if (!chat && choice.logprobs?.token_logprobs) {
    tokens = choice.logprobs.tokens ?? [];
    logprobs = choice.logprobs.token_logprobs.map((l) => l ?? -Infinity);
    alternatives = choice.logprobs.top_logprobs?.map((alts) => Object.entries(alts ?? {}).map(([token, logprob]) => ({ token, logprob })));
  }
  // With `return_tokens_as_token_ids`, tokens read `token_id:<id>`: the ids of the sampled tokens and alternatives.
  const parsed = tokens.map(tokenIdOf);
  const tokenIds = choice.token_ids ?? (parsed.length && parsed.every((id) => id !== null) ? (parsed as number[]) : []);
  const completion: Completion = { text, tokenIds, logprobs, finishReason: finishReason(choice) };
  if ((o.topLogprobs ?? 0) > 0 && alternatives) {
    const top = alternatives.map((alts) => alts.map((a): TopLogprob | null => {
      const id = tokenIdOf(a.token);
      return id === null ? null : { tokenId: id, logprob: a.logprob };
    }));
    if (top.every((alts) => alts.every((a) => a !== null))) completion.topLogprobs = top as TopLogprob[][];
  }
  return completion;
}

function tokenIdOf(token: string): number | null {
  const match = /^token_id:(\d+)$/.exec(token);
  return match ? Number(match[1]) : null;
}

/** OpenAI says `stop` for both an end-of-sequence token and a stop string; vLLM's `stop_reason` tells them apart. */
function finishReason(choice: ApiChoice): FinishReason {
  if (choice.finish_reason === 'length') return 'length';
  return typeof choice.stop_reason === 'string' ? 'stop' : 'eos';
}
