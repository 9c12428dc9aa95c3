/**
 * The whole decoder over one sequence (prompt + completion) for training: per-token log-probs of
 * the completion under the temperature-scaled log-softmax, and the exact backward from any
 * d loss / d logp (grpoLoss's `grad`) to every A and B of the adapter.
 *
 *   x0 = E[tokens];  x_{l+1} = layer_l(x_l);  z_t = RMSNorm(x_L)_t head;  logp_t = log softmax(z_t / T)[token_{t+1}]
 *
 * The head runs only at the positions that predict completion tokens. With `recompute`, a layer's
 * activations are dropped after the forward and rebuilt from its input during the backward: memory
 * holds one layer's activations plus every layer's input, for one more forward's time.
 */
import { InvalidInputError } from '../errors.js';
import type { LoraAdapter } from './adapter.js';
import { matmulAdd, matmulTransposedAdd, rmsNormBackward, rmsNormForward, ropeTables, type Alloc, type Vec } from './kernels.js';
import { layerBackward, layerForward, type LayerCache } from './layer.js';
import type { DecoderWeights } from './weights.js';

export interface LoraSequence {
  /** Prompt and completion token ids. */
  tokens: readonly number[];
  /** Index in `tokens` of the first completion token (>= 1: the prompt has at least one token). */
  completionStart: number;
}

export interface LoraForwardOptions {
  /** Sampling temperature the log-probs are taken under; default 1. */
  temperature?: number;
  /** Activation storage; default 'float32'. Sums always run in float64. */
  precision?: 'float32' | 'float64';
  /** Rebuild each layer's activations in the backward instead of keeping them; default false. */
  recompute?: boolean;
}

interface Forward {
  logprobs: number[];
  /** Softmax(z / T) of each scored position [completion, vocab]. */
  probs: Float64Array;
  inputs: Vec[];
  caches: Array<LayerCache | undefined>;
  last: Vec;
  hf: Vec;
  invF: Vec;
}

/** Log-probs of the completion tokens of `sequence` under the adapted model. */
export function loraLogprobs(weights: DecoderWeights, adapter: LoraAdapter, sequence: LoraSequence, options: LoraForwardOptions = {}): number[] {
  return forward(weights, adapter, sequence, { ...options, recompute: true }).logprobs;
}

/** A forward pass that can be taken back once: the loss needs its log-probs before the backward. */
export interface LoraPass {
  /** Log-probs of the completion tokens. */
  logprobs: number[];
  /**
   * Adds d loss / d (A, B) into `grad` (an adapter of the same layout, see zerosLike) for the
   * given d loss / d logp of each completion token. Frees the pass's activations.
   */
  backward(dlogp: ArrayLike<number>, grad: LoraAdapter): void;
}

/**
 * The forward of one sequence, kept for its backward. With `recompute` it keeps only each layer's
 * input, so a whole group's passes can wait for the loss at little memory.
 */
export function loraForward(weights: DecoderWeights, adapter: LoraAdapter, sequence: LoraSequence, options: LoraForwardOptions = {}): LoraPass {
  let f: Forward | undefined = forward(weights, adapter, sequence, options);
  return {
    logprobs: f.logprobs,
    backward: (dlogp, grad) => {
      if (!f) throw new InvalidInputError('backward', 'was already taken for this pass; run loraForward again.');
      backward(weights, adapter, sequence, f, dlogp, grad, options);
      f = undefined;
    },
  };
}

/** loraForward and its backward in one call; returns the log-probs. */
export function loraBackward(
  weights: DecoderWeights,
  adapter: LoraAdapter,
  sequence: LoraSequence,
  dlogp: ArrayLike<number>,
  grad: LoraAdapter,
  options: LoraForwardOptions = {},
): number[] {
  const pass = loraForward(weights, adapter, sequence, options);
  pass.backward(dlogp, grad);
  return pass.logprobs;
}

function backward(
  weights: DecoderWeights,
  adapter: LoraAdapter,
  sequence: LoraSequence,
  f: Forward,
  dlogp: ArrayLike<number>,
  grad: LoraAdapter,
  options: LoraForwardOptions,
): void {
  const completion = sequence.tokens.length - sequence.completionStart;
  if (dlogp.length !== completion) throw new InvalidInputError('dlogp', `has ${dlogp.length} entries for ${completion} completion tokens.`);
  if (grad.layers.length !== adapter.layers.length) throw new InvalidInputError('grad', 'must have the adapter\'s layout (zerosLike(adapter)).');
  const { shape } = weights;
  const { hiddenSize: H, vocabSize: V } = shape;
  const rows = sequence.tokens.length;
  const alloc = allocator(options);
  const temperature = options.temperature ?? 1;
  const first = sequence.completionStart - 1;

  // d logp_t / d z = (onehot(token) - softmax(z / T)) / T, then through the head to the final norm.
  const dz = new Float64Array(completion * V);
  for (let c = 0; c < completion; c++) {
    const g = dlogp[c];
    if (g === 0) continue;
    for (let v = 0; v < V; v++) dz[c * V + v] = (-g * f.probs[c * V + v]) / temperature;
    dz[c * V + sequence.tokens[sequence.completionStart + c]] += g / temperature;
  }
  const dhf = alloc(rows * H);
  headBackward(weights, dz, completion, dhf.subarray(first * H, (first + completion) * H));
  let d = alloc(rows * H);
  rmsNormBackward(dhf, f.last, f.invF, rows, H, weights.finalNorm, d);

  const table = ropeTables(rows, shape.headDim, shape.ropeTheta);
  for (let l = shape.numLayers - 1; l >= 0; l--) {
    const lora = adapter.layers[l] ?? {};
    const cache = f.caches[l] ?? layerForward(f.inputs[l], rows, weights.layers[l], lora, adapter, shape, table, alloc).cache;
    f.caches[l] = undefined;
    d = layerBackward(d, rows, cache, weights.layers[l], lora, grad.layers[l], adapter, shape, table, alloc);
  }
}

function forward(weights: DecoderWeights, adapter: LoraAdapter, sequence: LoraSequence, options: LoraForwardOptions): Forward {
  const { shape } = weights;
  const { hiddenSize: H, vocabSize: V } = shape;
  const { tokens, completionStart } = sequence;
  const temperature = options.temperature ?? 1;
  if (!(temperature > 0) || !Number.isFinite(temperature)) throw new InvalidInputError('temperature', `must be a finite number > 0, got ${String(temperature)}.`);
  if (!Number.isInteger(completionStart) || completionStart < 1 || completionStart > tokens.length) {
    throw new InvalidInputError('completionStart', `must be in [1, ${tokens.length}] (the prompt needs a token), got ${String(completionStart)}.`);
  }
  if (adapter.layers.length !== shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${shape.numLayers}.`);
  const rows = tokens.length;
  const alloc = allocator(options);

  let x = alloc(rows * H);
  tokens.forEach((token, t) => {
    if (!Number.isInteger(token) || token < 0 || token >= V) throw new InvalidInputError('tokens', `token ${String(token)} at ${t} is outside the vocabulary [0, ${V}).`);
    x.set(weights.embedding.subarray(token * H, (token + 1) * H), t * H);
  });
  const table = ropeTables(rows, shape.headDim, shape.ropeTheta);
  const inputs: Vec[] = [];
  const caches: Array<LayerCache | undefined> = [];
  for (let l = 0; l < shape.numLayers; l++) {
    inputs.push(x);
    const { out, cache } = layerForward(x, rows, weights.layers[l], adapter.layers[l] ?? {}, adapter, shape, table, alloc);
    caches.push(options.recompute ? undefined : cache);
    x = out;
  }
  const hf = alloc(rows * H);
  const invF = alloc(rows);
  rmsNormForward(x, rows, H, weights.finalNorm, shape.rmsNormEps, hf, invF);

  // The head at the positions that predict completion tokens: rows completionStart-1 .. rows-2.
  const completion = rows - completionStart;
  const scored = hf.subarray((completionStart - 1) * H, (rows - 1) * H);
  const probs = new Float64Array(completion * V);
  headForward(weights, scored, completion, probs);
  const logprobs = new Array<number>(completion);
  for (let c = 0; c < completion; c++) {
    const z = probs.subarray(c * V, (c + 1) * V);
    let max = -Infinity;
    for (let v = 0; v < V; v++) {
      z[v] /= temperature;
      if (z[v] > max) max = z[v];
    }
    let sum = 0;
    for (let v = 0; v < V; v++) sum += Math.exp(z[v] - max);
    const logSum = max + Math.log(sum);
    logprobs[c] = z[tokens[completionStart + c]] - logSum;
    for (let v = 0; v < V; v++) z[v] = Math.exp(z[v] - logSum);
  }
  return { logprobs, probs, inputs, caches, last: x, hf, invF };
}

/** z[rows, vocab] = h[rows, hidden] head: the embedding's rows when tied, else the [hidden, vocab] matrix. */
function headForward(weights: DecoderWeights, h: Vec, rows: number, z: Float64Array): void {
  const { hiddenSize: H, vocabSize: V } = weights.shape;
  if (weights.lmHead) matmulAdd(h, rows, H, weights.lmHead, V, z);
  else matmulTransposedAdd(h, rows, H, weights.embedding, V, z);
}

/** dh[rows, hidden] += dz[rows, vocab] head^T. */
function headBackward(weights: DecoderWeights, dz: Float64Array, rows: number, dh: Vec): void {
  const { hiddenSize: H, vocabSize: V } = weights.shape;
  if (weights.lmHead) matmulTransposedAdd(dz, rows, V, weights.lmHead, H, dh);
  else matmulAdd(dz, rows, V, weights.embedding, H, dh);
}

function allocator(options: LoraForwardOptions): Alloc {
  if (options.precision === undefined || options.precision === 'float32') return (n) => new Float32Array(n);
  if (options.precision === 'float64') return (n) => new Float64Array(n);
  throw new InvalidInputError('precision', `must be 'float32' or 'float64', got ${String(options.precision)}.`);
}
