/**
 * A fresh LM-head adapter (lib/policy/head-adapter.ts has the math): A drawn like PEFT's LoRA A
 * (uniform in ±1/sqrt(d), seeded), B zero, so z' = z until the first update and training starts
 * exactly at the base model.
 */
import { InvalidInputError } from '../../errors.js';
import { mulberry32 } from '../../math/random.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';

export interface AdapterShape {
  hiddenSize: number;
  vocabSize: number;
  rank: number;
  scale: number;
}

export interface AdapterInit {
  /** Rank r of the update; default 8. */
  rank?: number;
  /** s in z' = z + s (h A) B; default 2. */
  scale?: number;
  /** Seed of A's draw; default 0. */
  seed?: number;
}

export const ADAPTER_DEFAULTS = { rank: 8, scale: 2, seed: 0 } as const;

/** Largest rank accepted (the WebGPU kernels keep u = hA in workgroup memory). */
export const MAX_RANK = 64;

export function resolveShape(hiddenSize: number, vocabSize: number, init: AdapterInit = {}): AdapterShape {
  const rank = init.rank ?? ADAPTER_DEFAULTS.rank;
  const scale = init.scale ?? ADAPTER_DEFAULTS.scale;
  if (!Number.isInteger(rank) || rank < 1 || rank > MAX_RANK) throw new InvalidInputError('rank', `must be an integer from 1 to ${MAX_RANK}, got ${rank}.`);
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale <= 0) throw new InvalidInputError('scale', `must be a finite number > 0, got ${scale}.`);
  if (!Number.isInteger(hiddenSize) || hiddenSize < 1) throw new InvalidInputError('hiddenSize', `must be a positive integer, got ${hiddenSize}.`);
  if (!Number.isInteger(vocabSize) || vocabSize < 2) throw new InvalidInputError('vocabSize', `must be an integer >= 2, got ${vocabSize}.`);
  return { hiddenSize, vocabSize, rank, scale };
}

export function createAdapterWeights(shape: AdapterShape, seed: number = ADAPTER_DEFAULTS.seed): HeadAdapterWeights {
  if (!Number.isSafeInteger(seed)) throw new InvalidInputError('seed', `must be a safe integer, got ${seed}.`);
  const random = mulberry32(seed);
  const bound = 1 / Math.sqrt(shape.hiddenSize);
  const a = new Float32Array(shape.hiddenSize * shape.rank);
  for (let i = 0; i < a.length; i++) a[i] = (2 * random() - 1) * bound;
  return { ...shape, a, b: new Float32Array(shape.rank * shape.vocabSize) };
}
