/**
 * Messages between `createWorkerPolicy` (main thread) and `exposePolicy` (worker). Results carry
 * token ids and log-probs as typed arrays whose buffers are transferred, not copied; errors carry
 * their code and fields so the other side re-throws the same typed error.
 */
import {
  AbortError,
  AlreadyRunningError,
  BusyError,
  HttpError,
  InvalidInputError,
  ModelLoadError,
  NotFoundError,
  OutOfMemoryError,
  ParseError,
  ResponseTooLargeError,
  StoreCorruptError,
  StoreError,
  StoreQuotaError,
  UnsupportedError,
  WebgrpoError,
  type ErrorCode,
} from '../errors.js';
import type { GenerateGroupOptions, GroupResult, PolicyInfo, PromptInput, ScoreOptions, ScoreResult, TokenEvent, TopLogprob, FinishReason, Usage } from '../core/policy.js';

export type GenerateRequest = Omit<GenerateGroupOptions, 'signal' | 'onToken'> & { streamTokens: boolean };
export type ScoreRequest = Omit<ScoreOptions, 'signal' | 'completions'> & { completions: PackedRows<Int32Array> };

export type ToWorker =
  | { id: number; type: 'init'; init: unknown }
  | { id: number; type: 'generateGroup'; options: GenerateRequest }
  | { id: number; type: 'scoreCompletions'; options: ScoreRequest }
  | { id: number; type: 'encode'; text: string }
  | { id: number; type: 'decode'; tokenIds: number[]; options?: { skipSpecialTokens?: boolean } }
  | { id: number; type: 'renderPrompt'; input: PromptInput }
  | { id: number; type: 'abort'; target: number }
  | { id: number; type: 'dispose' };

export type FromWorker =
  | { id: number; type: 'result'; value: unknown }
  | { id: number; type: 'error'; error: SerializedError }
  | { id: number; type: 'token'; event: TokenEvent }
  | { id: number; type: 'progress'; progress: unknown };

export interface InitResult {
  info: PolicyInfo;
  can: { scoreCompletions: boolean; encode: boolean; decode: boolean; renderPrompt?: boolean };
}

/** Ragged rows as one flat typed array and the row lengths. */
export interface PackedRows<T extends Int32Array | Float64Array> {
  flat: T;
  lengths: Int32Array;
}

export function packRows<T extends Int32Array | Float64Array>(rows: readonly (readonly number[])[], Type: { new (n: number): T }): PackedRows<T> {
  const lengths = Int32Array.from(rows, (r) => r.length);
  const flat = new Type(lengths.reduce((s, n) => s + n, 0));
  let at = 0;
  for (const row of rows) {
    flat.set(row, at);
    at += row.length;
  }
  return { flat, lengths };
}

export function unpackRows(packed: PackedRows<Int32Array | Float64Array>): number[][] {
  const rows: number[][] = [];
  let at = 0;
  for (const n of packed.lengths) {
    rows.push(Array.from(packed.flat.subarray(at, at + n)));
    at += n;
  }
  return rows;
}

export function buffersOf(...packed: (PackedRows<Int32Array | Float64Array> | undefined)[]): ArrayBuffer[] {
  return packed.flatMap((p) => (p ? [p.flat.buffer as ArrayBuffer, p.lengths.buffer as ArrayBuffer] : []));
}

export interface PackedGroup {
  promptTokenIds: Int32Array;
  texts: string[];
  finishReasons: FinishReason[];
  tokenIds: PackedRows<Int32Array>;
  logprobs: PackedRows<Float64Array>;
  sampledLogprobs?: PackedRows<Float64Array>;
  topLogprobs?: TopLogprob[][][];
  usage: Usage;
}

export function packGroup(group: GroupResult): { value: PackedGroup; transfer: ArrayBuffer[] } {
  const c = group.completions;
  const sampled = c.every((x) => x.sampledLogprobs) ? packRows(c.map((x) => x.sampledLogprobs!), Float64Array) : undefined;
  const value: PackedGroup = {
    promptTokenIds: Int32Array.from(group.promptTokenIds),
    texts: c.map((x) => x.text),
    finishReasons: c.map((x) => x.finishReason),
    tokenIds: packRows(c.map((x) => x.tokenIds), Int32Array),
    logprobs: packRows(c.map((x) => x.logprobs), Float64Array),
    ...(sampled ? { sampledLogprobs: sampled } : {}),
    ...(c.every((x) => x.topLogprobs) ? { topLogprobs: c.map((x) => x.topLogprobs!) } : {}),
    usage: group.usage,
  };
  return { value, transfer: [value.promptTokenIds.buffer as ArrayBuffer, ...buffersOf(value.tokenIds, value.logprobs, sampled)] };
}

export function unpackGroup(p: PackedGroup): GroupResult {
  const tokenIds = unpackRows(p.tokenIds);
  const logprobs = unpackRows(p.logprobs);
  const sampled = p.sampledLogprobs && unpackRows(p.sampledLogprobs);
  return {
    promptTokenIds: Array.from(p.promptTokenIds),
    completions: p.texts.map((text, i) => ({
      text,
      tokenIds: tokenIds[i],
      logprobs: logprobs[i],
      ...(sampled ? { sampledLogprobs: sampled[i] } : {}),
      finishReason: p.finishReasons[i],
      ...(p.topLogprobs ? { topLogprobs: p.topLogprobs[i] } : {}),
    })),
    usage: p.usage,
  };
}

export interface PackedScore {
  logprobs: PackedRows<Float64Array>;
  entropies: PackedRows<Float64Array>;
  topLogprobs?: TopLogprob[][][];
}

export function packScore(score: ScoreResult): { value: PackedScore; transfer: ArrayBuffer[] } {
  const value = {
    logprobs: packRows(score.logprobs, Float64Array),
    entropies: packRows(score.entropies, Float64Array),
    ...(score.topLogprobs ? { topLogprobs: score.topLogprobs } : {}),
  };
  return { value, transfer: buffersOf(value.logprobs, value.entropies) };
}

export function unpackScore(p: PackedScore): ScoreResult {
  return { logprobs: unpackRows(p.logprobs), entropies: unpackRows(p.entropies), ...(p.topLogprobs ? { topLogprobs: p.topLogprobs } : {}) };
}

export interface SerializedError {
  name: string;
  message: string;
  code?: ErrorCode;
  /** InvalidInputError */
  argument?: string;
  /** HttpError */
  status?: number;
  /** ResponseTooLargeError */
  limit?: number;
  /** StoreCorruptError */
  what?: string;
  /** AlreadyRunningError */
  runId?: string;
  stack?: string;
}

export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const out: SerializedError = { name: error.name, message: error.message };
  if (error.stack) out.stack = error.stack;
  if (error instanceof WebgrpoError) out.code = error.code;
  if (error instanceof InvalidInputError) out.argument = error.argument;
  if (error instanceof HttpError && error.status !== undefined) out.status = error.status;
  if (error instanceof ResponseTooLargeError) out.limit = error.limit;
  if (error instanceof StoreCorruptError) out.what = error.what;
  if (error instanceof AlreadyRunningError) out.runId = error.runId;
  return out;
}

/**
 * Rebuilds the error the worker threw, by its `code` (names are for people: a build that renames
 * classes must still revive the same class with its fields). A code without a class of its own
 * revives as a WebgrpoError with that code and the name it was sent with.
 */
export function reviveError(e: SerializedError): Error {
  const error = errorOfCode(e);
  if (!e.code) error.name = e.name;
  error.message = e.message;
  if (e.stack) error.stack = e.stack;
  return error;
}

function errorOfCode(e: SerializedError): Error {
  switch (e.code) {
    case undefined:
      return new Error('');
    case 'InvalidInput':
      return new InvalidInputError(e.argument ?? '', '');
    case 'Http':
      return e.limit !== undefined ? new ResponseTooLargeError(e.status, e.limit, '') : new HttpError(e.status, '');
    case 'Aborted':
      return new AbortError();
    case 'ModelLoad':
      return new ModelLoadError('');
    case 'NotFound':
      return new NotFoundError('');
    case 'Unsupported':
      return new UnsupportedError('');
    case 'Busy':
      return new BusyError('');
    case 'Store':
      return new StoreError('');
    case 'StoreQuota':
      return new StoreQuotaError('');
    case 'StoreCorrupt':
      return new StoreCorruptError(e.what ?? '', '');
    case 'AlreadyRunning':
      return new AlreadyRunningError(e.runId ?? '', '');
    case 'Parse':
      return new ParseError('');
    case 'OutOfMemory':
      return new OutOfMemoryError('');
    default: {
      const error = new WebgrpoError(e.code, '');
      error.name = e.name;
      return error;
    }
  }
}
