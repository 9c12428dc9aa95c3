/**
 * The whole decoder over a prompt and its group of completions, for training: per-token log-probs
 * of each completion under the temperature-scaled log-softmax, and the exact backward from any
 * d loss / d logp (grpoLoss's `grad`) to every A and B of the adapter.
 *
 *   x0 = E[tokens];  x_{l+1} = layer_l(x_l);  z_t = RMSNorm(x_L)_t head;  logp_t = log softmax(z_t / T)[token_{t+1}]
 *
 * The prompt and the completions are one matrix of rows: the prompt's rows once, then each
 * completion's, at positions continuing the prompt's and attending to the prompt and to their own
 * earlier rows (AttentionShape). So the prompt is computed once per group, as onnxruntime's scoring
 * does, and its gradient collects every completion's. The head runs only at the rows that predict
 * completion tokens. With `recompute`, a layer's activations are dropped after the forward and
 * rebuilt from its input during the backward: memory holds one layer's activations plus every
 * layer's input, for one more forward's time.
 */
import { InvalidInputError } from '../errors.js';
import type { LoraAdapter } from './adapter.js';
import { matmulAdd, matmulTransposedAdd, outerAdd, rmsNormBackward, rmsNormForward, ropeTables, type Alloc, type Vec } from './kernels.js';
import { layerBackward, layerForward, type LayerCache, type RowLayout } from './layer.js';
import type { DecoderWeights } from './weights.js';

export interface LoraGroupInput {
  /** At least one token. */
  promptIds: readonly number[];
  completions: ReadonlyArray<readonly number[]>;
}

/** One prompt and one completion as a single token list. */
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

/** A forward pass that can be taken back once: the loss needs its log-probs before the backward. */
export interface LoraGroupPass {
  /** Per completion, the log-probs of its tokens. */
  logprobs: number[][];
  /** Per completion, the entropy of the distribution each of its tokens was scored under. */
  entropies: number[][];
  /**
   * Adds d loss / d (A, B) into `grad` (an adapter of the same layout, see zerosLike) for the
   * given d loss / d logp of each completion token, and d loss / d entropy when the loss has an
   * entropy term. Frees the pass's activations.
   */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: LoraAdapter, dentropies?: ReadonlyArray<ArrayLike<number>>): void;
}

/** What a backward adds into: the adapter's gradient, the base weights' gradient (full-grad.ts), or both. */
export interface GradTargets {
  /** d loss / d (A, B), in the adapter's layout (zerosLike). */
  lora?: LoraAdapter;
  /** d loss / d every base weight, in the weights' layout (zerosLikeDecoder). */
  full?: DecoderWeights;
}

/** A forward of a group whose backward adds into any GradTargets. */
export interface GroupPass {
  logprobs: number[][];
  entropies: number[][];
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, targets: GradTargets, dentropies?: ReadonlyArray<ArrayLike<number>>): void;
}

/** The forward of a group, kept for its backward. */
export function loraGroupForward(weights: DecoderWeights, adapter: LoraAdapter, group: LoraGroupInput, options: LoraForwardOptions = {}): LoraGroupPass {
  const pass = groupPass(weights, adapter, group, options);
  return { logprobs: pass.logprobs, entropies: pass.entropies, backward: (dlogps, grad, dentropies) => pass.backward(dlogps, { lora: grad }, dentropies) };
}

/** The forward of a group under `adapter` (one with no layers adapted for the bare model). */
export function groupPass(weights: DecoderWeights, adapter: LoraAdapter, group: LoraGroupInput, options: LoraForwardOptions = {}): GroupPass {
  const packed = pack(weights, group);
  let f: Forward | undefined = forward(weights, adapter, packed, options);
  return {
    logprobs: f.logprobs,
    entropies: f.entropies,
    backward: (dlogps, targets, dentropies) => {
      if (!f) throw new InvalidInputError('backward', 'was already taken for this pass; run the forward again.');
      backward(weights, adapter, packed, f, dlogps, targets, options, dentropies);
      f = undefined;
    },
  };
}

/** Log-probs of the completion tokens of `sequence` under the adapted model. */
export function loraLogprobs(weights: DecoderWeights, adapter: LoraAdapter, sequence: LoraSequence, options: LoraForwardOptions = {}): number[] {
  return loraGroupForward(weights, adapter, asGroup(sequence), { ...options, recompute: true }).logprobs[0];
}

function asGroup({ tokens, completionStart }: LoraSequence): LoraGroupInput {
  if (!Number.isInteger(completionStart) || completionStart < 1 || completionStart > tokens.length) {
    throw new InvalidInputError('completionStart', `must be in [1, ${tokens.length}] (the prompt needs a token), got ${String(completionStart)}.`);
  }
  return { promptIds: tokens.slice(0, completionStart), completions: [tokens.slice(completionStart)] };
}

/** The group as rows (shared with the WebGPU engine, lib/lora/webgpu/model.ts): tokens, positions, attention segments, and the rows that predict each completion token. */
export interface Packed {
  tokens: number[];
  layout: Omit<RowLayout, 'cos' | 'sin'>;
  positions: Int32Array;
  /** Row predicting each scored token, and that token, completions in order. */
  scoredRows: Int32Array;
  scoredTokens: Int32Array;
  lengths: number[];
}

export function pack(weights: DecoderWeights, group: LoraGroupInput): Packed {
  const { promptIds, completions } = group;
  if (!Array.isArray(promptIds) || promptIds.length === 0) throw new InvalidInputError('promptIds', 'must hold at least one token.');
  if (!Array.isArray(completions)) throw new InvalidInputError('completions', 'must be an array of token-id arrays.');
  const P = promptIds.length;
  const tokens = [...promptIds, ...completions.flat()];
  const V = weights.shape.vocabSize;
  tokens.forEach((token, t) => {
    if (!Number.isInteger(token) || token < 0 || token >= V) throw new InvalidInputError('tokens', `token ${String(token)} at row ${t} is outside the vocabulary [0, ${V}).`);
  });
  const rows = tokens.length;
  const positions = new Int32Array(rows);
  const segment = new Int32Array(rows);
  for (let t = 0; t < P; t++) positions[t] = t;
  const scored = rows - P;
  const scoredRows = new Int32Array(scored);
  const scoredTokens = new Int32Array(scored);
  let row = P;
  let k = 0;
  for (const completion of completions) {
    const start = row;
    for (let c = 0; c < completion.length; c++, row++, k++) {
      positions[row] = P + c;
      segment[row] = start;
      scoredRows[k] = c === 0 ? P - 1 : row - 1;
      scoredTokens[k] = completion[c];
    }
  }
  return { tokens, layout: { prefix: P, segment }, positions, scoredRows, scoredTokens, lengths: completions.map((c) => c.length) };
}

interface Forward {
  logprobs: number[][];
  entropies: number[][];
  /** Softmax(z / T) of each scored row [scored, vocab]. */
  probs: Float64Array;
  /** Entropy of each scored row's softmax. */
  entropy: Float64Array;
  /** The final norm's output at the scored rows (the head's input). */
  hs: Vec;
  inputs: Vec[];
  caches: Array<LayerCache | undefined>;
  last: Vec;
  invF: Vec;
  layout: RowLayout;
}

function forward(weights: DecoderWeights, adapter: LoraAdapter, packed: Packed, options: LoraForwardOptions): Forward {
  const { shape } = weights;
  const { hiddenSize: H, vocabSize: V } = shape;
  const temperature = options.temperature ?? 1;
  if (!(temperature > 0) || !Number.isFinite(temperature)) throw new InvalidInputError('temperature', `must be a finite number > 0, got ${String(temperature)}.`);
  if (adapter.layers.length !== shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${shape.numLayers}.`);
  const { tokens } = packed;
  const rows = tokens.length;
  const alloc = allocator(options);

  let x = alloc(rows * H);
  tokens.forEach((token, t) => x.set(weights.embedding.subarray(token * H, (token + 1) * H), t * H));
  const layout: RowLayout = { ...ropeTables(packed.positions, shape.headDim, shape.ropeTheta), ...packed.layout };
  const inputs: Vec[] = [];
  const caches: Array<LayerCache | undefined> = [];
  for (let l = 0; l < shape.numLayers; l++) {
    inputs.push(x);
    const { out, cache } = layerForward(x, rows, weights.layers[l], adapter.layers[l] ?? {}, adapter, shape, layout, alloc);
    caches.push(options.recompute ? undefined : cache);
    x = out;
  }
  const hf = alloc(rows * H);
  const invF = alloc(rows);
  rmsNormForward(x, rows, H, weights.finalNorm, shape.rmsNormEps, hf, invF);

  const scored = packed.scoredRows.length;
  const hs = alloc(scored * H);
  packed.scoredRows.forEach((r, k) => hs.set(hf.subarray(r * H, (r + 1) * H), k * H));
  const probs = new Float64Array(scored * V);
  headForward(weights, hs, scored, probs);
  const flat = new Array<number>(scored);
  const entropy = new Float64Array(scored);
  for (let k = 0; k < scored; k++) {
    const z = probs.subarray(k * V, (k + 1) * V);
    let max = -Infinity;
    for (let v = 0; v < V; v++) {
      z[v] /= temperature;
      if (z[v] > max) max = z[v];
    }
    let sum = 0;
    for (let v = 0; v < V; v++) sum += Math.exp(z[v] - max);
    const logSum = max + Math.log(sum);
    flat[k] = z[packed.scoredTokens[k]] - logSum;
    let h = 0;
    for (let v = 0; v < V; v++) {
      const logp = z[v] - logSum;
      z[v] = Math.exp(logp);
      h -= z[v] * logp;
    }
    entropy[k] = h;
  }
  const logprobs: number[][] = [];
  const entropies: number[][] = [];
  let at = 0;
  for (const n of packed.lengths) {
    logprobs.push(flat.slice(at, at + n));
    entropies.push(Array.from(entropy.subarray(at, at + n)));
    at += n;
  }
  return { logprobs, entropies, probs, entropy, hs, inputs, caches, last: x, invF, layout };
}

function backward(
  weights: DecoderWeights,
  adapter: LoraAdapter,
  packed: Packed,
  f: Forward,
  dlogps: ReadonlyArray<ArrayLike<number>>,
  { lora: grad, full }: GradTargets,
  options: LoraForwardOptions,
  dentropies?: ReadonlyArray<ArrayLike<number>>,
): void {
  for (const [name, rows] of [['dlogps', dlogps], ['dentropies', dentropies ?? dlogps]] as const) {
    if (rows.length !== packed.lengths.length) throw new InvalidInputError(name, `has ${rows.length} rows for ${packed.lengths.length} completions.`);
    packed.lengths.forEach((n, i) => {
      if (rows[i]?.length !== n) throw new InvalidInputError(`${name}[${i}]`, `has ${rows[i]?.length} entries for ${n} completion tokens.`);
    });
  }
  if (grad && grad.layers.length !== adapter.layers.length) throw new InvalidInputError('grad', "must have the adapter's layout (zerosLike(adapter)).");
  if (full && full.layers.length !== weights.layers.length) throw new InvalidInputError('grad', "must have the weights' layout (zerosLikeDecoder(weights)).");
  const { shape } = weights;
  const { hiddenSize: H, vocabSize: V } = shape;
  const rows = packed.tokens.length;
  const alloc = allocator(options);
  const temperature = options.temperature ?? 1;
  const scored = packed.scoredRows.length;

  // d logp / d z = (onehot(token) - softmax(z / T)) / T and d H / d z_v = -p_v (log p_v + H) / T,
  // through the head, onto the scored rows.
  const dz = new Float64Array(scored * V);
  let k = 0;
  for (const [i, n] of packed.lengths.entries()) {
    for (let c = 0; c < n; c++, k++) {
      const g = dlogps[i][c];
      const e = dentropies ? dentropies[i][c] : 0;
      if (g === 0 && e === 0) continue;
      for (let v = 0; v < V; v++) {
        const p = f.probs[k * V + v];
        const dh = p > 0 ? -p * (Math.log(p) + f.entropy[k]) : 0;
        dz[k * V + v] = (-g * p + e * dh) / temperature;
      }
      dz[k * V + packed.scoredTokens[k]] += g / temperature;
    }
  }
  const dhs = alloc(scored * H);
  headBackward(weights, dz, scored, dhs);
  if (full) headWeightGrad(weights, dz, f.hs, scored, full);
  const dhf = alloc(rows * H);
  packed.scoredRows.forEach((r, s) => {
    for (let i = 0; i < H; i++) dhf[r * H + i] += dhs[s * H + i];
  });
  let d = alloc(rows * H);
  rmsNormBackward(dhf, f.last, f.invF, rows, H, weights.finalNorm, d, full?.finalNorm);

  for (let l = shape.numLayers - 1; l >= 0; l--) {
    const lora = adapter.layers[l] ?? {};
    const cache = f.caches[l] ?? layerForward(f.inputs[l], rows, weights.layers[l], lora, adapter, shape, f.layout, alloc).cache;
    f.caches[l] = undefined;
    d = layerBackward(d, rows, cache, weights.layers[l], lora, grad?.layers[l] ?? {}, adapter, shape, f.layout, alloc, full?.layers[l]);
  }
  if (!full) return;
  // x0 = E[tokens]: each row's gradient lands on its token's embedding row.
  packed.tokens.forEach((token, t) => {
    for (let i = 0; i < H; i++) full.embedding[token * H + i] += d[t * H + i];
  });
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

/** The head's weight gradient: tied, dE[vocab, hidden] += dz^T h; untied, dHead[hidden, vocab] += h^T dz. */
function headWeightGrad(weights: DecoderWeights, dz: Float64Array, h: Vec, rows: number, full: DecoderWeights): void {
  const { hiddenSize: H, vocabSize: V } = weights.shape;
  if (weights.lmHead) {
    if (!full.lmHead) throw new InvalidInputError('grad', "has no lmHead; the model's head is untied (zerosLikeDecoder(weights)).");
    outerAdd(h, rows, H, dz, V, full.lmHead);
  } else outerAdd(dz, rows, V, h, H, full.embedding);
}

function allocator(options: LoraForwardOptions): Alloc {
  if (options.precision === undefined || options.precision === 'float32') return (n) => new Float32Array(n);
  if (options.precision === 'float64') return (n) => new Float64Array(n);
  throw new InvalidInputError('precision', `must be 'float32' or 'float64', got ${String(options.precision)}.`);
}
