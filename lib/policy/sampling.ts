/**
 * Token sampling: the one definition every backend follows.
 *
 * Given one row of logits and a uniform draw u in [0, 1):
 *   1. z = logits / temperature                        (temperature 0: greedy, see below)
 *   2. keep z >= theta, where theta is the largest of
 *        top-k:  the k-th largest z (ties at the boundary are kept, as in transformers)
 *        top-p:  the smallest z whose strictly-more-likely mass, among tokens kept by top-k, is < p
 *        min-p:  max z + log(min_p), i.e. p >= min_p * p_max
 *      applied in transformers' order (temperature, top-k, top-p, min-p);
 *   3. pick the first token, in vocabulary order, whose cumulative kept probability exceeds u.
 *
 * It reports log p(token) under the temperature-scaled distribution (TRL's `logprobs`) and under
 * the filtered distribution the token was actually drawn from. Greedy decoding (temperature 0)
 * takes the first maximal logit; its `logprob` is under the untempered distribution (T = 1) and
 * `sampledLogprob` is 0 (the filtered distribution is a point mass).
 *
 * With an allowed-token bitset (constrained decoding, lib/constrain), steps 2 and 3 run over
 * the allowed tokens only: disallowed ones leave the kept set after log Z is taken, so `logprob`
 * stays the unconstrained one and `sampledLogprob` is exact under the constraint; greedy takes the
 * first maximal allowed logit.
 *
 * The WebGPU backend runs the same steps in a kernel (lib/policy/onnx/webgpu-sampler.ts) so logits
 * never leave the GPU; this file is its reference and the CPU/WASM implementation.
 */
import { InvalidInputError } from '../errors.js';
import type { SamplingOptions } from '../core/policy.js';

export interface SamplingConfig {
  temperature: number;
  /** 0 = off. */
  topK: number;
  /** 1 = off. */
  topP: number;
  /** 0 = off. */
  minP: number;
}

export interface SampledToken {
  tokenId: number;
  /** log p(token) under softmax(logits / temperature). */
  logprob: number;
  /** log p(token) under the top-k/top-p/min-p filtered distribution it was drawn from. */
  sampledLogprob: number;
}

/** Validates sampling options and fills defaults (temperature 1, no filters). */
export function resolveSampling(options: SamplingOptions): SamplingConfig {
  const { temperature = 1, topK = 0, topP = 1, minP = 0 } = options;
  if (!(Number.isFinite(temperature) && temperature >= 0)) {
    throw new InvalidInputError('temperature', `must be a finite number >= 0 (0 = greedy), got ${temperature}.`);
  }
  if (!(Number.isInteger(topK) && topK >= 0)) {
    throw new InvalidInputError('topK', `must be an integer >= 0 (0 disables top-k), got ${topK}.`);
  }
  if (!(topP > 0 && topP <= 1)) throw new InvalidInputError('topP', `must be in (0, 1] (1 disables top-p), got ${topP}.`);
  if (!(minP >= 0 && minP < 1)) throw new InvalidInputError('minP', `must be in [0, 1) (0 disables min-p), got ${minP}.`);
  return { temperature, topK, topP, minP };
}

/** Whether the config filters anything (otherwise the kept set is the whole vocabulary). */
export function isFiltering(config: SamplingConfig, vocabSize: number): boolean {
  return (config.topK > 0 && config.topK < vocabSize) || config.topP < 1 || config.minP > 0;
}

/**
 * Samples from `logits[offset .. offset + vocabSize)`. `scratch` (length >= 2 * vocabSize) avoids
 * allocations per call; pass the same one for every row.
 */
export function sampleToken(
  logits: ArrayLike<number>,
  offset: number,
  vocabSize: number,
  config: SamplingConfig,
  u: number,
  scratch: Float64Array = new Float64Array(2 * vocabSize),
  mask?: Uint32Array,
): SampledToken {
  if (config.temperature === 0) return greedy(logits, offset, vocabSize, mask);
  const inverseT = 1 / config.temperature;
  if (!mask && !isFiltering(config, vocabSize)) return drawAll(logits, offset, vocabSize, u, scratch, inverseT);
  const z = scratch.subarray(0, vocabSize);
  const e = scratch.subarray(vocabSize, 2 * vocabSize); // exp(z - max), computed once
  let max = -Infinity;
  for (let i = 0; i < vocabSize; i++) {
    const value = logits[offset + i] * inverseT;
    z[i] = value;
    if (value > max) max = value;
  }
  let total = 0;
  for (let i = 0; i < vocabSize; i++) total += e[i] = Math.exp(z[i] - max);
  const logTotal = Math.log(total);
  if (mask) {
    // Disallowed tokens drop out of the kept set: z = -Infinity, no mass.
    let allowedMax = -Infinity;
    total = 0;
    for (let i = 0; i < vocabSize; i++) {
      if (((mask[i >>> 5] >>> (i & 31)) & 1) === 0) {
        z[i] = -Infinity;
        e[i] = 0;
      } else {
        total += e[i];
        if (z[i] > allowedMax) allowedMax = z[i];
      }
    }
    if (allowedMax === -Infinity) throw new InvalidInputError('mask', 'allows no token of the row.');
    return drawKept(logits, offset, vocabSize, config, u, z, e, max, allowedMax, total, logTotal, inverseT, mask);
  }
  return drawKept(logits, offset, vocabSize, config, u, z, e, max, max, total, logTotal, inverseT, undefined);
}

/**
 * Steps 1 and 3 when nothing is filtered (the usual GRPO setting): the same arithmetic as the
 * general path, without storing z or testing a threshold per token, since every token is kept.
 * At a 49k vocabulary this is most of the sampler's own time per decode step.
 */
function drawAll(logits: ArrayLike<number>, offset: number, vocabSize: number, u: number, scratch: Float64Array, inverseT: number): SampledToken {
  const e = scratch.subarray(0, vocabSize);
  let max = -Infinity;
  for (let i = 0; i < vocabSize; i++) {
    const value = logits[offset + i] * inverseT;
    if (value > max) max = value;
  }
  let total = 0;
  for (let i = 0; i < vocabSize; i++) total += e[i] = Math.exp(logits[offset + i] * inverseT - max);
  const target = u * total;
  let cumulative = 0;
  let tokenId = vocabSize - 1;
  for (let i = 0; i < vocabSize; i++) {
    cumulative += e[i];
    if (cumulative > target) {
      tokenId = i;
      break;
    }
  }
  const zs = logits[offset + tokenId] * inverseT - max;
  const logprob = zs - Math.log(total);
  return { tokenId, logprob, sampledLogprob: logprob };
}

/** Steps 2 and 3 over z (the disallowed at -Infinity); `total` is the mass of the allowed tokens. */
function drawKept(
  logits: ArrayLike<number>,
  offset: number,
  vocabSize: number,
  config: SamplingConfig,
  u: number,
  z: Float64Array,
  e: Float64Array,
  max: number,
  allowedMax: number,
  total: number,
  logTotal: number,
  inverseT: number,
  mask: Uint32Array | undefined,
): SampledToken {
  const theta = keepThreshold(z, vocabSize, allowedMax, config);
  let kept = total;
  if (theta > -Infinity) {
    kept = 0;
    for (let i = 0; i < vocabSize; i++) if (z[i] >= theta) kept += e[i];
  }

  // Inverse CDF in vocabulary order over the kept tokens.
  const target = u * kept;
  let cumulative = 0;
  let tokenId = -1;
  for (let i = 0; i < vocabSize; i++) {
    if (z[i] < theta || (mask && ((mask[i >>> 5] >>> (i & 31)) & 1) === 0)) continue;
    cumulative += e[i];
    tokenId = i;
    if (cumulative > target) break;
  }
  const zs = logits[offset + tokenId] * inverseT - max;
  return { tokenId, logprob: zs - logTotal, sampledLogprob: zs - Math.log(kept) };
}

/**
 * theta such that the kept set is { z >= theta }; -Infinity keeps everything. `max` is max(z).
 * Exported for the WebGPU kernel's tests.
 */
export function keepThreshold(z: Float64Array, vocabSize: number, max: number, config: SamplingConfig): number {
  let theta = -Infinity;
  if (config.topK > 0 && config.topK < vocabSize) theta = kthLargest(z, vocabSize, config.topK);
  if (config.topP < 1) theta = Math.max(theta, nucleusThreshold(z, vocabSize, max, theta, config.topP));
  if (config.minP > 0) theta = Math.max(theta, max + Math.log(config.minP));
  return theta;
}

function greedy(logits: ArrayLike<number>, offset: number, vocabSize: number, mask?: Uint32Array): SampledToken {
  let best = -1;
  let bestValue = -Infinity;
  let max = -Infinity;
  for (let i = 0; i < vocabSize; i++) {
    const value = logits[offset + i];
    if (value > max) max = value;
    if ((best < 0 || value > bestValue) && (!mask || ((mask[i >>> 5] >>> (i & 31)) & 1) === 1)) {
      bestValue = value;
      best = i;
    }
  }
  if (best < 0) throw new InvalidInputError('mask', 'allows no token of the row.');
  let total = 0;
  for (let i = 0; i < vocabSize; i++) total += Math.exp(logits[offset + i] - max);
  return { tokenId: best, logprob: bestValue - max - Math.log(total), sampledLogprob: 0 };
}

/** The k-th largest of z[0..n) for 0 < k < n: a size-k min-heap, O(n log k). */
function kthLargest(z: Float64Array, n: number, k: number): number {
  const heap = new Float64Array(k);
  for (let i = 0; i < k; i++) heapPush(heap, i, z[i]);
  for (let i = k; i < n; i++) {
    if (z[i] > heap[0]) {
      heap[0] = z[i];
      siftDown(heap, k);
    }
  }
  return heap[0];
}

function heapPush(heap: Float64Array, size: number, value: number): void {
  let i = size;
  heap[i] = value;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent] <= heap[i]) break;
    [heap[parent], heap[i]] = [heap[i], heap[parent]];
    i = parent;
  }
}

function siftDown(heap: Float64Array, size: number): void {
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    if (left < size && heap[left] < heap[smallest]) smallest = left;
    if (right < size && heap[right] < heap[smallest]) smallest = right;
    if (smallest === i) return;
    [heap[smallest], heap[i]] = [heap[i], heap[smallest]];
    i = smallest;
  }
}

/**
 * The smallest kept value whose strictly-greater mass (normalized over tokens with z >= floor) is
 * below p. Tied values are kept or dropped together.
 */
function nucleusThreshold(z: Float64Array, n: number, max: number, floor: number, p: number): number {
  let kept = 0;
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (z[i] >= floor) {
      kept += Math.exp(z[i] - max);
      count++;
    }
  }
  // Tokens lighter than (1 - p) * kept / count weigh at most (1 - p) * kept together, so the walk
  // below stops before reaching any of them: only the heavier ones need sorting.
  const light = max + Math.log(((1 - p) * kept) / count);
  const candidates: number[] = [];
  for (let i = 0; i < n; i++) if (z[i] >= floor && z[i] >= light) candidates.push(z[i]);
  const values = Float64Array.from(candidates).sort().reverse();
  const budget = p * kept;
  let above = 0;
  let theta = values[0];
  for (let i = 0; i < values.length && above < budget; ) {
    theta = values[i];
    // Consume the whole group of equal values.
    while (i < values.length && values[i] === theta) above += Math.exp(values[i++] - max);
  }
  return theta;
}
