/**
 * Parsing of `POST /v1/chat/completions` and `POST /v1/completions` bodies into one request shape.
 * Field names, types and ranges follow OpenAI's API; `top_k`, `min_p`, `return_token_ids` and
 * `return_tokens_as_token_ids` follow vLLM's extensions.
 */
import { WebgrpoError } from '../errors.js';
import { compileResponseFormat } from '../constrain/format.js';
import type { ResponseFormat, ChatMessage, PromptInput, SamplingOptions } from '../core/policy.js';
import { ApiError, badField } from './api-error.js';
import {
  asBody,
  optionalBoolean,
  optionalInteger,
  optionalNumber,
  rejectUnsupported,
  requiredString,
  checkLength,
  stopStrings,
  typeName,
  type Body,
} from './fields.js';

export interface Limits {
  /** Largest `n`. */
  maxN: number;
  /** Largest `max_tokens`. */
  maxTokens: number;
  /** `max_tokens` when the request gives none. */
  defaultMaxTokens: number;
  /** Most milliseconds a `response_format` may take to compile (GrammarOptions.maxCompileMs). */
  formatCompileMs: number;
}

export interface GenerationRequest {
  kind: 'chat' | 'text';
  model: string;
  input: PromptInput;
  n: number;
  maxTokens: number;
  sampling: SamplingOptions;
  /** Report per-token log-probs. */
  logprobs: boolean;
  /** Alternatives per token (0: none). */
  topLogprobs: number;
  stream: boolean;
  includeUsage: boolean;
  /** vLLM's `return_token_ids`: add `prompt_token_ids` and per-choice `token_ids`. */
  returnTokenIds: boolean;
  /** vLLM's `return_tokens_as_token_ids`: log-prob tokens as `token_id:<id>`. */
  tokensAsIds: boolean;
  /** OpenAI's `response_format` (chat completions): `json_schema` or `json_object`; absent: free text. */
  responseFormat?: ResponseFormat;
}

const MAX_STOP_STRINGS = 16;
const MAX_TOP_LOGPROBS = 20;

const UNSUPPORTED: Record<string, (value: unknown) => boolean> = {
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  repetition_penalty: (v) => v === 1,
  logit_bias: (v) => isEmptyObject(v),
  tools: (v) => Array.isArray(v) && v.length === 0,
  functions: (v) => Array.isArray(v) && v.length === 0,
  tool_choice: (v) => v === 'none' || v === 'auto',
  function_call: (v) => v === 'none' || v === 'auto',
  audio: () => false,
  prediction: () => false,
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
  echo: (v) => v === false,
  suffix: (v) => v === '',
};

export function parseChatRequest(raw: unknown, limits: Limits): GenerationRequest {
  const body = asBody(raw);
  const model = requiredString(body, 'model');
  const messages = parseMessages(body.messages);
  rejectUnsupported(body, UNSUPPORTED);
  const logprobs = optionalBoolean(body, 'logprobs') ?? false;
  const topLogprobs = optionalInteger(body, 'top_logprobs', { min: 0, max: MAX_TOP_LOGPROBS }) ?? 0;
  if (topLogprobs > 0 && !logprobs) throw badField('top_logprobs', 'needs logprobs: true.');
  const maxTokens =
    optionalInteger(body, 'max_completion_tokens', { min: 1, max: limits.maxTokens }) ??
    optionalInteger(body, 'max_tokens', { min: 1, max: limits.maxTokens }) ??
    limits.defaultMaxTokens;
  const responseFormat = parseResponseFormat(body.response_format, limits);
  return { kind: 'chat', model, input: { messages }, maxTokens, logprobs, topLogprobs, ...common(body, limits), ...(responseFormat ? { responseFormat } : {}) };
}

/**
 * OpenAI's `response_format`: `{type: 'text'}` (or none), `{type: 'json_object'}`, or
 * `{type: 'json_schema', json_schema: {name, schema, strict}}`. The format is compiled here so a
 * schema outside the supported subset is a 400 before the request queues. Decoding is always
 * constrained, so `strict: false` gets the same guarantee as `strict: true`.
 */
function parseResponseFormat(value: unknown, limits: Limits): ResponseFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw badField('response_format', `must be an object, got ${typeName(value)}.`, 'invalid_type');
  let format: ResponseFormat;
  if (value.type === 'text') return undefined;
  if (value.type === 'json_object') format = { type: 'json_object' };
  else if (value.type === 'json_schema') {
    const spec = value.json_schema;
    if (!isObject(spec)) throw badField('response_format.json_schema', `must be an object with name and schema, got ${typeName(spec)}.`, 'invalid_type');
    if (typeof spec.name !== 'string' || spec.name === '') throw badField('response_format.json_schema.name', 'must be a non-empty string.');
    // OpenAI's limit for the name.
    checkLength('response_format.json_schema.name', spec.name, 64);
    if (spec.strict !== undefined && spec.strict !== null && typeof spec.strict !== 'boolean') throw badField('response_format.json_schema.strict', 'must be a boolean.', 'invalid_type');
    const schema = spec.schema ?? true;
    if (typeof schema !== 'boolean' && !isObject(schema)) throw badField('response_format.json_schema.schema', `must be a JSON Schema object, got ${typeName(schema)}.`, 'invalid_type');
    format = { type: 'json_schema', schema };
  } else {
    throw badField('response_format.type', `must be "text", "json_object" or "json_schema", got ${JSON.stringify(value.type)?.slice(0, 40)}.`);
  }
  try {
    compileResponseFormat(format, { maxCompileMs: limits.formatCompileMs });
  } catch (error) {
    if (error instanceof WebgrpoError) throw badField('response_format', error.message);
    throw error;
  }
  return format;
}

export function parseCompletionRequest(raw: unknown, limits: Limits): GenerationRequest {
  const body = asBody(raw);
  const model = requiredString(body, 'model');
  const prompt = parsePrompt(body.prompt);
  rejectUnsupported(body, UNSUPPORTED);
  const shared = common(body, limits);
  const bestOf = optionalInteger(body, 'best_of', { min: 1 });
  if (bestOf !== undefined && bestOf !== shared.n) {
    throw badField('best_of', 'is not supported unless it equals n.', 'unsupported_parameter');
  }
  // The legacy API's `logprobs` is the number of alternatives (0..5) per token; null means none.
  const legacy = optionalInteger(body, 'logprobs', { min: 0, max: 5 });
  const maxTokens = optionalInteger(body, 'max_tokens', { min: 1, max: limits.maxTokens }) ?? limits.defaultMaxTokens;
  return {
    kind: 'text',
    model,
    input: { prompt },
    maxTokens,
    logprobs: legacy !== undefined,
    topLogprobs: legacy ?? 0,
    ...shared,
  };
}

function common(body: Body, limits: Limits) {
  const n = optionalInteger(body, 'n', { min: 1, max: limits.maxN }) ?? 1;
  const sampling: SamplingOptions = {};
  const temperature = optionalNumber(body, 'temperature', { min: 0, max: 2 });
  if (temperature !== undefined) sampling.temperature = temperature;
  const topP = optionalNumber(body, 'top_p', { above: 0, max: 1 });
  if (topP !== undefined) sampling.topP = topP;
  const topK = optionalInteger(body, 'top_k', { min: -1 });
  if (topK !== undefined && topK > 0) sampling.topK = topK;
  const minP = optionalNumber(body, 'min_p', { min: 0, max: 1 });
  if (minP !== undefined) sampling.minP = minP;
  const seed = optionalInteger(body, 'seed', { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
  if (seed !== undefined) sampling.seed = seed;
  const stop = stopStrings(body, MAX_STOP_STRINGS);
  if (stop) sampling.stop = stop;
  const stream = optionalBoolean(body, 'stream') ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!isObject(body.stream_options)) throw badField('stream_options', `must be an object, got ${typeName(body.stream_options)}.`, 'invalid_type');
    if (!stream) throw badField('stream_options', 'is only allowed with stream: true.');
    includeUsage = optionalBoolean(body.stream_options, 'include_usage') ?? false;
  }
  return {
    n,
    sampling,
    stream,
    includeUsage,
    returnTokenIds: optionalBoolean(body, 'return_token_ids') ?? false,
    tokensAsIds: optionalBoolean(body, 'return_tokens_as_token_ids') ?? false,
  };
}

const ROLES: Record<string, ChatMessage['role']> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant' };

export function parseMessages(value: unknown): ChatMessage[] {
  if (value === undefined || value === null) throw badField('messages', 'is required.', 'missing_required_parameter');
  if (!Array.isArray(value)) throw badField('messages', `must be an array, got ${typeName(value)}.`, 'invalid_type');
  if (value.length === 0) throw badField('messages', 'must contain at least one message.');
  return value.map((m: unknown, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw badField(at, `must be an object, got ${typeName(m)}.`, 'invalid_type');
    if (typeof m.role !== 'string') throw badField(`${at}.role`, 'must be a string.', 'invalid_type');
    const role = ROLES[m.role];
    if (!role) throw badField(`${at}.role`, `"${m.role}" is not supported; use system, developer, user or assistant.`);
    return { role, content: messageText(m.content, `${at}.content`) };
  });
}

/** A message's content: a string, or text parts joined by newlines (as vLLM does). */
function messageText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badField(at, `must be a string or an array of text parts, got ${typeName(content)}.`, 'invalid_type');
  return content
    .map((part: unknown, j) => {
      if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
        throw badField(`${at}[${j}]`, 'only { "type": "text", "text": "..." } parts are supported.', 'unsupported_parameter');
      }
      return part.text;
    })
    .join('\n');
}

function parsePrompt(value: unknown): string {
  const prompt = Array.isArray(value) && value.length === 1 ? value[0] : value;
  if (prompt === undefined || prompt === null) throw badField('prompt', 'is required.', 'missing_required_parameter');
  if (typeof prompt !== 'string') {
    throw badField('prompt', `must be a string (or a list of one string), got ${typeName(value)}; token-id and batched prompts are not supported.`, 'invalid_type');
  }
  if (prompt === '') throw badField('prompt', 'must not be empty.');
  return prompt;
}

function isObject(value: unknown): value is Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isEmptyObject(value: unknown): boolean {
  return isObject(value) && Object.keys(value).length === 0;
}

/** 404 for a model this server does not serve, as OpenAI answers it. */
export function unknownModel(model: string, served: string): ApiError {
  return new ApiError(404, `The model \`${model}\` does not exist on this server; it serves \`${served}\` (see GET /v1/models).`, {
    type: 'invalid_request_error',
    param: 'model',
    code: 'model_not_found',
  });
}
