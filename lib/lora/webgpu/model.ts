/**
 * The full-depth LoRA training pass on WebGPU: the same decoder, log-probs and backward as
 * lib/lora/model.ts (the CPU engine, which derives each step), every operation a WGSL kernel
 * (kernels.ts, layer.ts) with float32 activations. The frozen weights are uploaded once per model
 * (createWebgpuLoraModel) in the format the export stores them: float32, 16-bit halves or 4-bit
 * MatMulNBits blocks, dequantized in the kernels that read them (frozen-matrix.ts), never as a
 * float32 copy on the device. Per pass the adapter's A and B and the group's tokens are uploaded,
 * every activation stays on the GPU, and only the per-token log-probs and entropies (forward) and
 * the A and B gradients (backward) are read back.
 *
 * The backward frees each layer's buffers once it is through the layer. With `recompute` the
 * forward keeps only each layer's input and rebuilds the layer's activations from it in the
 * backward, as the CPU engine does: one layer's activations at a time plus every layer's input,
 * for one more forward's time. The same kernels on the same inputs give the same numbers.
 */
import { InvalidInputError } from '../../errors.js';
import type { GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import type { LoraAdapter, LoraPair } from '../adapter.js';
import { ropeTables } from '../kernels.js';
import { pack, type LoraForwardOptions, type LoraGroupInput, type Packed } from '../model.js';
import type { Q4Matrix } from '../q4.js';
import { LORA_MODULES, type DecoderLayerWeights, type DecoderWeights, type HalfType, type LoraModule } from '../weights.js';
import type { FrozenFormat } from './frozen-kernels.js';
import { frozenGather, frozenMatmul, matrixTensors, uploadMatrix, type FrozenMatrix } from './frozen-matrix.js';
import { GpuRecorder, type Tensor } from './gpu.js';
import { layerBackward, layerForward, type GpuLayer, type GpuProjection, type LayerActs, type LayerGrads, type PassContext } from './layer.js';

/** What a model holds on its device. */
export interface WebgpuLoraModelStats {
  /** Every buffer of the model's weights, bytes as allocated. */
  bytes: number;
  /** The matrices' bytes (projections, embedding, untied head) by the format each is stored in. */
  matrixBytes: Record<FrozenFormat, number>;
  /** The rest: norm weights and biases (float32). */
  otherBytes: number;
}

/** The frozen decoder's weights in GPU buffers, for every pass of a run. */
export interface WebgpuLoraModel {
  readonly device: GpuDeviceLike;
  readonly weights: DecoderWeights;
  /** Frees the weights' buffers. */
  dispose(): void;
}

interface ModelBuffers {
  embedding: FrozenMatrix;
  lmHead?: FrozenMatrix;
  finalNorm: Tensor;
  layers: GpuLayer[];
  all: Tensor[];
  stats: WebgpuLoraModelStats;
}

const buffersOf = new WeakMap<WebgpuLoraModel, ModelBuffers>();

/** Uploads `weights` to `device`, each matrix in its stored format (float32, 16-bit, 4-bit). */
export function createWebgpuLoraModel(device: GpuDeviceLike, weights: DecoderWeights): WebgpuLoraModel {
  const recorder = new GpuRecorder(device);
  const all: Tensor[] = [];
  const upload = (data: Float32Array | Uint32Array): Tensor => {
    const t = recorder.tensor(data.length, data, true);
    all.push(t);
    return t;
  };
  const stats: WebgpuLoraModelStats = { bytes: 0, matrixBytes: { f32: 0, f16: 0, bf16: 0, q4: 0 }, otherBytes: 0 };
  const other = (data: Float32Array): Tensor => {
    const t = upload(data);
    stats.otherBytes += t.buffer.size;
    return t;
  };
  const matrix = (weight: Float32Array | Q4Matrix, rows: number, cols: number, half: HalfType | undefined, where: string): FrozenMatrix => {
    const m = uploadMatrix(upload, weight, rows, cols, half, where);
    stats.matrixBytes[m.format] += matrixTensors(m).reduce((n, t) => n + t.buffer.size, 0);
    return m;
  };
  const { vocabSize: V, hiddenSize: H } = weights.shape;
  let buffers: ModelBuffers;
  try {
    const layers = weights.layers.map((w: DecoderLayerWeights, l): GpuLayer => {
      const projections = Object.fromEntries(
        LORA_MODULES.map((m): [LoraModule, GpuProjection] => {
          const p = w[m];
          const weight = matrix(p.weight, p.inDim, p.outDim, p.half, `layer ${l} ${m}`);
          return [m, { inDim: p.inDim, outDim: p.outDim, weight, ...(p.bias ? { bias: other(p.bias) } : {}) }];
        }),
      ) as Record<LoraModule, GpuProjection>;
      return { inputNorm: other(w.inputNorm), postNorm: other(w.postNorm), ...(w.qNorm ? { qNorm: other(w.qNorm) } : {}), ...(w.kNorm ? { kNorm: other(w.kNorm) } : {}), projections };
    });
    buffers = {
      embedding: matrix(weights.embedding, V, H, weights.embeddingHalf, 'the embedding'),
      ...(weights.lmHead ? { lmHead: matrix(weights.lmHead, H, V, weights.lmHeadHalf, 'the LM head') } : {}),
      finalNorm: other(weights.finalNorm),
      layers,
      all,
      stats,
    };
  } catch (error) {
    // A weight that cannot be uploaded (malformed, too large) frees the ones already on the device.
    for (const t of all) t.buffer.destroy();
    throw error;
  }
  stats.bytes = all.reduce((n, t) => n + t.buffer.size, 0);
  const model: WebgpuLoraModel = {
    device,
    weights,
    dispose: () => {
      for (const t of all) t.buffer.destroy();
      all.length = 0;
    },
  };
  buffersOf.set(model, buffers);
  return model;
}

/** The bytes `model`'s weights take on its device, by storage format. */
export function webgpuLoraModelStats(model: WebgpuLoraModel): WebgpuLoraModelStats {
  const buffers = buffersOf.get(model);
  if (!buffers) throw new InvalidInputError('model', 'is not a WebGPU LoRA model (createWebgpuLoraModel).');
  return { ...buffers.stats, matrixBytes: { ...buffers.stats.matrixBytes } };
}

/** A WebGPU forward that can be taken back once, as LoraGroupPass, with an asynchronous backward. */
export interface WebgpuLoraGroupPass {
  logprobs: number[][];
  entropies: number[][];
  /** Adds d loss / d (A, B) into `grad` (zerosLike(adapter)); frees the pass's GPU buffers. */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: LoraAdapter, dentropies?: ReadonlyArray<ArrayLike<number>>): Promise<void>;
  /** Frees the pass's GPU buffers without a backward. */
  dispose(): void;
  /**
   * Bytes of the pass's own buffers (activations, gradients, scratch, the adapter's copies; not
   * the model's weights) alive now, and the most alive at once since the forward began.
   */
  bufferBytes(): { live: number; peak: number };
}

/** The forward of a group on the GPU, kept for its backward (same inputs and results as loraGroupForward). */
export async function webgpuLoraGroupForward(model: WebgpuLoraModel, adapter: LoraAdapter, group: LoraGroupInput, options: LoraForwardOptions = {}): Promise<WebgpuLoraGroupPass> {
  const buffers = buffersOf.get(model);
  if (!buffers || buffers.all.length === 0) throw new InvalidInputError('model', 'is not a live WebGPU LoRA model (createWebgpuLoraModel, not disposed).');
  const { weights } = model;
  const { shape } = weights;
  const temperature = options.temperature ?? 1;
  const recompute = options.recompute === true;
  if (!(temperature > 0) || !Number.isFinite(temperature)) throw new InvalidInputError('temperature', `must be a finite number > 0, got ${String(temperature)}.`);
  if (adapter.layers.length !== shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${shape.numLayers}.`);
  const packed = pack(weights, group);
  const g = new GpuRecorder(model.device);
  await g.ready;
  const rows = packed.tokens.length;
  const { hiddenSize: H, vocabSize: V } = shape;
  const { cos, sin } = ropeTables(packed.positions, shape.headDim, shape.ropeTheta);
  const ctx: PassContext = {
    g,
    shape,
    rows,
    scale: adapter.scale,
    r: adapter.config.r,
    cos: g.tensor(cos.length, Float32Array.from(cos)),
    sin: g.tensor(sin.length, Float32Array.from(sin)),
    segment: g.tensor(rows, Uint32Array.from(packed.layout.segment)),
    prefix: packed.layout.prefix,
  };
  const lora = (l: number): Partial<Record<LoraModule, LoraPair>> => adapter.layers[l] ?? {};

  let x = g.tensor(rows * H);
  frozenGather(g, buffers.embedding, g.tensor(rows, Uint32Array.from(packed.tokens)), x, rows);
  // Per layer: its input, and (activations kept) its activations and where its buffers start and end.
  const inputs: Tensor[] = [];
  const acts: LayerActs[] = [];
  const spans: Array<[number, number]> = [];
  for (let l = 0; l < shape.numLayers; l++) {
    inputs.push(x);
    const start = g.mark();
    const a = layerForward(ctx, buffers.layers[l], lora(l), x);
    if (recompute) g.release(start, [a.out]);
    else {
      acts.push(a);
      spans.push([start, g.mark()]);
    }
    x = a.out;
  }
  const headStart = g.mark();
  const hf = g.tensor(rows * H);
  const invF = g.tensor(rows);
  g.run('rmsnorm', rows, [rows, H], [shape.rmsNormEps], [x, buffers.finalNorm, hf, invF]);
  const scored = packed.scoredRows.length;
  const scoredRows = g.tensor(scored, Uint32Array.from(packed.scoredRows));
  const scoredTokens = g.tensor(scored, Uint32Array.from(packed.scoredTokens));
  const hs = g.tensor(scored * H);
  g.run('gather', scored * H, [scored, H], [], [hf, scoredRows, hs]);
  const z = g.tensor(scored * V);
  // Untied: z = hs head [H, V]; tied: z = hs E^T with E [V, H].
  if (buffers.lmHead) frozenMatmul(g, hs, buffers.lmHead, z, { M: scored, N: V, K: H, sam: H, sak: 1, transposed: false });
  else frozenMatmul(g, hs, buffers.embedding, z, { M: scored, N: V, K: H, sam: H, sak: 1, transposed: true });
  const stats = g.tensor(scored * 4);
  g.run('softmax', scored, [scored, V], [1 / temperature], [z, scoredTokens, stats]);
  const [flat] = await g.read([stats], true);

  const logprobs: number[][] = [];
  const entropies: number[][] = [];
  let at = 0;
  for (const n of packed.lengths) {
    logprobs.push(Array.from({ length: n }, (_, c) => flat[4 * (at + c)]));
    entropies.push(Array.from({ length: n }, (_, c) => flat[4 * (at + c) + 1]));
    at += n;
  }
  let live = true;
  return {
    logprobs,
    entropies,
    bufferBytes: () => g.bytes,
    dispose: () => {
      live = false;
      g.discard();
    },
    backward: async (dlogps, grad, dentropies) => {
      if (!live) throw new InvalidInputError('backward', 'was already taken for this pass; run the forward again.');
      checkGradients(packed, adapter, dlogps, grad, dentropies);
      live = false;
      const coefs = new Float32Array(scored * 2);
      let k = 0;
      for (const [i, n] of packed.lengths.entries()) {
        for (let c = 0; c < n; c++, k++) {
          coefs[2 * k] = dlogps[i][c];
          coefs[2 * k + 1] = dentropies ? dentropies[i][c] : 0;
        }
      }
      g.run('dlogits', scored * V, [scored, V], [1 / temperature], [scoredTokens, stats, g.tensor(scored * 2, coefs), z]);
      const dhs = g.tensor(scored * H);
      if (buffers.lmHead) frozenMatmul(g, z, buffers.lmHead, dhs, { M: scored, N: H, K: V, sam: V, sak: 1, transposed: true });
      else frozenMatmul(g, z, buffers.embedding, dhs, { M: scored, N: H, K: V, sam: V, sak: 1, transposed: false });
      const dhf = g.tensor(rows * H);
      g.run('scatter', rows * H, [rows, H, scored], [], [dhs, scoredRows, dhf]);
      let d = g.tensor(rows * H);
      g.run('rmsnormBackward', rows, [rows, H], [], [dhf, x, invF, buffers.finalNorm, d]);
      g.release(headStart, [d]);
      // The gradients live until they are read, outside every layer's span.
      const grads: Array<{ target: Float32Array; tensor: Tensor }> = [];
      const layerGrads: LayerGrads[] = adapter.layers.map((layer, l) => {
        const out: LayerGrads = {};
        for (const [m, pair] of Object.entries(layer) as Array<[LoraModule, LoraPair]>) {
          const entry = { dA: g.tensor(pair.A.length), dB: g.tensor(pair.B.length) };
          out[m] = entry;
          const into = grad.layers[l][m];
          if (into) grads.push({ target: into.A, tensor: entry.dA }, { target: into.B, tensor: entry.dB });
        }
        return out;
      });
      let layerOut = x;
      for (let l = shape.numLayers - 1; l >= 0; l--) {
        const start = g.mark();
        const a = recompute ? layerForward(ctx, buffers.layers[l], lora(l), inputs[l]) : acts[l];
        const dIn = layerBackward(ctx, buffers.layers[l], a, layerGrads[l], d);
        g.release(start, [dIn]);
        // Done with this layer: its kept activations, its output and the gradient that came in.
        if (!recompute) g.release(spans[l][0], [], spans[l][1]);
        g.free([d, layerOut]);
        d = dIn;
        layerOut = inputs[l];
      }
      const read = await g.read(grads.map((e) => e.tensor));
      grads.forEach(({ target }, i) => {
        const src = read[i];
        for (let j = 0; j < src.length; j++) target[j] += src[j];
      });
    },
  };
}

function checkGradients(packed: Packed, adapter: LoraAdapter, dlogps: ReadonlyArray<ArrayLike<number>>, grad: LoraAdapter, dentropies?: ReadonlyArray<ArrayLike<number>>): void {
  for (const [name, rows] of [['dlogps', dlogps], ['dentropies', dentropies ?? dlogps]] as const) {
    if (rows.length !== packed.lengths.length) throw new InvalidInputError(name, `has ${rows.length} rows for ${packed.lengths.length} completions.`);
    packed.lengths.forEach((n, i) => {
      if (rows[i]?.length !== n) throw new InvalidInputError(`${name}[${i}]`, `has ${rows[i]?.length} entries for ${n} completion tokens.`);
    });
  }
  if (grad.layers.length !== adapter.layers.length) throw new InvalidInputError('grad', "must have the adapter's layout (zerosLike(adapter)).");
}
