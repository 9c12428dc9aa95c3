/**
 * The adapter file: a trained LM-head adapter as one JSON document, to download, keep, share and
 * load again (onto the same base model) for sampling or further training. Version 1:
 *
 *   {
 *     "format": "webgrpo.adapter", "version": 1,
 *     "target": "lm_head",                     z' = z + scale * (h A) B on the head's logits
 *     "hiddenSize": d, "vocabSize": V, "rank": r, "scale": s,
 *     "model": "<base model id>",              informative, optional
 *     "updates": n,                            optimizer updates it has had, optional
 *     "createdAt": "<ISO time>",
 *     "a": "<base64>", "b": "<base64>"         float32 little-endian, row-major: A is d x r, B is r x V
 *   }
 *
 * `readAdapterFile` checks every field, the payload sizes and that all values are finite. A run's
 * checkpoint (what the stores keep after each step) is an adapter file plus AdamW's state in the
 * same encoding, so a resumed run continues exactly where it stopped.
 */
import { InvalidInputError } from '../../errors.js';
import { decodeFloats, encodeFloats } from '../../core/float-base64.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import { MAX_RANK } from './adapter.js';
import type { AdapterState } from './state.js';
import { parsedJson } from '../../core/shape.js';

export const ADAPTER_FORMAT = 'webgrpo.adapter';
export const ADAPTER_VERSION = 1;

export interface AdapterFile {
  format: typeof ADAPTER_FORMAT;
  version: number;
  target: 'lm_head';
  hiddenSize: number;
  vocabSize: number;
  rank: number;
  scale: number;
  model?: string;
  updates?: number;
  createdAt: string;
  a: string;
  b: string;
}

/** An adapter file plus the optimizer's state: what a gradient run stores after each step. */
export interface HeadAdapterCheckpoint {
  /** The run's step after which it was taken. */
  step: number;
  adapter: AdapterFile;
  /** AdamW's moments (base64 float32, shaped like A and B) and its update count. */
  optimizer: { updates: number; m: { a: string; b: string }; v: { a: string; b: string } };
}

/** The head adapter's A and B as a JSON-safe file (base64 float32), with the model it was trained on and its update count. */
export function writeAdapterFile(weights: HeadAdapterWeights, meta: { model?: string; updates?: number } = {}): AdapterFile {
  return {
    format: ADAPTER_FORMAT,
    version: ADAPTER_VERSION,
    target: 'lm_head',
    hiddenSize: weights.hiddenSize,
    vocabSize: weights.vocabSize,
    rank: weights.rank,
    scale: weights.scale,
    ...(meta.model !== undefined ? { model: meta.model } : {}),
    ...(meta.updates !== undefined ? { updates: meta.updates } : {}),
    createdAt: new Date().toISOString(),
    a: encodeFloats(weights.a),
    b: encodeFloats(weights.b),
  };
}

/** Validates an adapter file (an object or its JSON text) and decodes its weights. */
export function readAdapterFile(data: unknown, at = 'adapter'): HeadAdapterWeights & { model?: string; updates?: number } {
  const value = parsedJson(data, at);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInputError(at, 'expected an adapter file object.');
  const file = value as Record<string, unknown>;
  if (file.format !== ADAPTER_FORMAT) throw new InvalidInputError(`${at}.format`, `expected "${ADAPTER_FORMAT}"; is this a webgrpo adapter file?`);
  if (!Number.isInteger(file.version) || (file.version as number) < 1) throw new InvalidInputError(`${at}.version`, 'expected a positive integer.');
  if ((file.version as number) > ADAPTER_VERSION) {
    throw new InvalidInputError(`${at}.version`, `is ${String(file.version)}, newer than this webgrpo reads (${ADAPTER_VERSION}); upgrade webgrpo.`);
  }
  if (file.target !== 'lm_head') throw new InvalidInputError(`${at}.target`, 'expected "lm_head".');
  const int = (key: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const x = file[key];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) throw new InvalidInputError(`${at}.${key}`, `expected an integer from ${min} to ${max}.`);
    return x;
  };
  const hiddenSize = int('hiddenSize', 1);
  const vocabSize = int('vocabSize', 2);
  const rank = int('rank', 1, MAX_RANK);
  const scale = file.scale;
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale <= 0) throw new InvalidInputError(`${at}.scale`, 'expected a finite number > 0.');
  if (file.model !== undefined && typeof file.model !== 'string') throw new InvalidInputError(`${at}.model`, 'expected a string.');
  if (file.updates !== undefined) int('updates', 0);
  if (typeof file.createdAt !== 'string') throw new InvalidInputError(`${at}.createdAt`, 'expected an ISO date string.');
  const a = decodeFloats(file.a, hiddenSize * rank, `${at}.a`);
  const b = decodeFloats(file.b, rank * vocabSize, `${at}.b`);
  return {
    hiddenSize,
    vocabSize,
    rank,
    scale,
    a,
    b,
    ...(file.model !== undefined ? { model: file.model as string } : {}),
    ...(file.updates !== undefined ? { updates: file.updates as number } : {}),
  };
}

/** What a gradient run stores after a step: the adapter file and AdamW's moments and update count, tagged with the step. */
export function writeCheckpoint(state: AdapterState, shape: Omit<HeadAdapterWeights, 'a' | 'b'>, step: number, model?: string): HeadAdapterCheckpoint {
  return {
    step,
    adapter: writeAdapterFile({ ...shape, a: state.a, b: state.b }, { model, updates: state.updates }),
    optimizer: {
      updates: state.updates,
      m: { a: encodeFloats(state.m.a), b: encodeFloats(state.m.b) },
      v: { a: encodeFloats(state.v.a), b: encodeFloats(state.v.b) },
    },
  };
}

/** Validates a checkpoint and decodes it into an engine state and the adapter's shape. */
export function readCheckpoint(data: unknown, at = 'checkpoint'): { step: number; weights: HeadAdapterWeights; state: AdapterState } {
  if (typeof data !== 'object' || data === null) throw new InvalidInputError(at, 'expected an adapter checkpoint object.');
  const cp = data as Record<string, unknown>;
  if (!Number.isInteger(cp.step) || (cp.step as number) < 0) throw new InvalidInputError(`${at}.step`, 'expected an integer >= 0.');
  const weights = readAdapterFile(cp.adapter, `${at}.adapter`);
  const optimizer = cp.optimizer as { updates?: unknown; m?: { a?: unknown; b?: unknown }; v?: { a?: unknown; b?: unknown } } | undefined;
  if (typeof optimizer !== 'object' || optimizer === null) throw new InvalidInputError(`${at}.optimizer`, 'expected { updates, m, v }.');
  if (!Number.isInteger(optimizer.updates) || (optimizer.updates as number) < 0) throw new InvalidInputError(`${at}.optimizer.updates`, 'expected an integer >= 0.');
  const sizeA = weights.hiddenSize * weights.rank;
  const sizeB = weights.rank * weights.vocabSize;
  const state: AdapterState = {
    a: weights.a,
    b: weights.b,
    m: { a: decodeFloats(optimizer.m?.a, sizeA, `${at}.optimizer.m.a`), b: decodeFloats(optimizer.m?.b, sizeB, `${at}.optimizer.m.b`) },
    v: { a: decodeFloats(optimizer.v?.a, sizeA, `${at}.optimizer.v.a`), b: decodeFloats(optimizer.v?.b, sizeB, `${at}.optimizer.v.b`) },
    updates: optimizer.updates as number,
  };
  return { step: cp.step as number, weights, state };
}
