/**
 * The full-depth LoRA training pass on WebGPU: the same decoder, log-probs and backward as
 * lib/lora/model.ts (the CPU engine, which derives each step), every operation a WGSL kernel
 * (kernels.ts) on float32 buffers. The frozen weights are uploaded once per model
 * (createWebgpuLoraModel); per pass the adapter's A and B and the group's tokens are uploaded,
 * every activation stays on the GPU, and only the per-token log-probs and entropies (forward) and
 * the A and B gradients (backward) are read back.
 *
 * Activations are all kept between forward and backward (no recomputation on this engine).
 * 4-bit (MatMulNBits) weights are not supported here: the CPU engine dequantizes them on the fly.
 */
import { InvalidInputError, UnsupportedError } from '../../errors.js';
import type { GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import type { LoraAdapter, LoraPair } from '../adapter.js';
import { ropeTables } from '../kernels.js';
import { pack, type LoraForwardOptions, type LoraGroupInput, type Packed } from '../model.js';
import { LORA_MODULES, type DecoderLayerWeights, type DecoderShape, type DecoderWeights, type LoraModule } from '../weights.js';
import { GpuRecorder, type Tensor } from './gpu.js';

interface GpuProjection {
  inDim: number;
  outDim: number;
  weight: Tensor;
  bias?: Tensor;
}

interface GpuLayer {
  inputNorm: Tensor;
  postNorm: Tensor;
  qNorm?: Tensor;
  kNorm?: Tensor;
  projections: Record<LoraModule, GpuProjection>;
}

/** The frozen decoder's weights in GPU buffers, for every pass of a run. */
export interface WebgpuLoraModel {
  readonly device: GpuDeviceLike;
  readonly weights: DecoderWeights;
  /** Frees the weights' buffers. */
  dispose(): void;
}

interface ModelBuffers {
  embedding: Tensor;
  lmHead?: Tensor;
  finalNorm: Tensor;
  layers: GpuLayer[];
  all: Tensor[];
}

const buffersOf = new WeakMap<WebgpuLoraModel, ModelBuffers>();

/** Uploads `weights` to `device` (float32 projections only; 4-bit ones stay with the CPU engine). */
export function createWebgpuLoraModel(device: GpuDeviceLike, weights: DecoderWeights): WebgpuLoraModel {
  const recorder = new GpuRecorder(device);
  const all: Tensor[] = [];
  const upload = (data: Float32Array): Tensor => {
    const t = recorder.tensor(data.length, data, true);
    all.push(t);
    return t;
  };
  let buffers: ModelBuffers;
  try {
    const layers = weights.layers.map((w: DecoderLayerWeights, l): GpuLayer => {
      const projections = Object.fromEntries(
        LORA_MODULES.map((m) => {
          const p = w[m];
          if (!(p.weight instanceof Float32Array)) throw new UnsupportedError(`Layer ${l} ${m} is 4-bit (MatMulNBits); the WebGPU LoRA engine takes float32 weights. Use the CPU engine.`);
          return [m, { inDim: p.inDim, outDim: p.outDim, weight: upload(p.weight), ...(p.bias ? { bias: upload(p.bias) } : {}) }];
        }),
      ) as Record<LoraModule, GpuProjection>;
      return { inputNorm: upload(w.inputNorm), postNorm: upload(w.postNorm), ...(w.qNorm ? { qNorm: upload(w.qNorm) } : {}), ...(w.kNorm ? { kNorm: upload(w.kNorm) } : {}), projections };
    });
    buffers = {
      embedding: upload(weights.embedding),
      ...(weights.lmHead ? { lmHead: upload(weights.lmHead) } : {}),
      finalNorm: upload(weights.finalNorm),
      layers,
      all,
    };
  } catch (error) {
    // A weight that cannot be uploaded (4-bit, too large) frees the ones already on the device.
    for (const t of all) t.buffer.destroy();
    throw error;
  }
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

/** A WebGPU forward that can be taken back once, as LoraGroupPass, with an asynchronous backward. */
export interface WebgpuLoraGroupPass {
  logprobs: number[][];
  entropies: number[][];
  /** Adds d loss / d (A, B) into `grad` (zerosLike(adapter)); frees the pass's GPU buffers. */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: LoraAdapter, dentropies?: ReadonlyArray<ArrayLike<number>>): Promise<void>;
  /** Frees the pass's GPU buffers without a backward. */
  dispose(): void;
}

interface Branch {
  A: Tensor;
  B: Tensor;
  u: Tensor;
}

interface LayerActs {
  x: Tensor;
  h: Tensor;
  inv1: Tensor;
  qLin?: Tensor;
  kLin?: Tensor;
  qInv?: Tensor;
  kInv?: Tensor;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  probs: Tensor;
  ctx: Tensor;
  x1: Tensor;
  h2: Tensor;
  inv2: Tensor;
  gate: Tensor;
  up: Tensor;
  act: Tensor;
  branches: Partial<Record<LoraModule, Branch>>;
}

/** The forward of a group on the GPU, kept for its backward (same inputs and results as loraGroupForward). */
export async function webgpuLoraGroupForward(model: WebgpuLoraModel, adapter: LoraAdapter, group: LoraGroupInput, options: LoraForwardOptions = {}): Promise<WebgpuLoraGroupPass> {
  const buffers = buffersOf.get(model);
  if (!buffers || buffers.all.length === 0) throw new InvalidInputError('model', 'is not a live WebGPU LoRA model (createWebgpuLoraModel, not disposed).');
  const { weights } = model;
  const { shape } = weights;
  const temperature = options.temperature ?? 1;
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

  let x = g.tensor(rows * H);
  g.run('gather', rows * H, [rows, H], [], [buffers.embedding, g.tensor(rows, Uint32Array.from(packed.tokens)), x]);
  const acts: LayerActs[] = [];
  for (let l = 0; l < shape.numLayers; l++) {
    const a = layerForward(ctx, buffers.layers[l], adapter.layers[l] ?? {}, x);
    acts.push(a);
    x = a.out;
  }
  const hf = g.tensor(rows * H);
  const invF = g.tensor(rows);
  g.run('rmsnorm', rows, [rows, H], [shape.rmsNormEps], [x, buffers.finalNorm, hf, invF]);
  const scored = packed.scoredRows.length;
  const scoredRows = g.tensor(scored, Uint32Array.from(packed.scoredRows));
  const scoredTokens = g.tensor(scored, Uint32Array.from(packed.scoredTokens));
  const hs = g.tensor(scored * H);
  g.run('gather', scored * H, [scored, H], [], [hf, scoredRows, hs]);
  const z = g.tensor(scored * V);
  if (buffers.lmHead) g.matmul(hs, buffers.lmHead, z, { M: scored, N: V, K: H, sam: H, sak: 1, sbk: V, sbn: 1 });
  else g.matmul(hs, buffers.embedding, z, { M: scored, N: V, K: H, sam: H, sak: 1, sbk: 1, sbn: H });
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
      if (buffers.lmHead) g.matmul(z, buffers.lmHead, dhs, { M: scored, N: H, K: V, sam: V, sak: 1, sbk: 1, sbn: V });
      else g.matmul(z, buffers.embedding, dhs, { M: scored, N: H, K: V, sam: V, sak: 1, sbk: H, sbn: 1 });
      const dhf = g.tensor(rows * H);
      g.run('scatter', rows * H, [rows, H, scored], [], [dhs, scoredRows, dhf]);
      let d = g.tensor(rows * H);
      g.run('rmsnormBackward', rows, [rows, H], [], [dhf, x, invF, buffers.finalNorm, d]);
      const grads: Array<{ target: Float32Array; tensor: Tensor }> = [];
      for (let l = shape.numLayers - 1; l >= 0; l--) {
        const layerGrads: Partial<Record<LoraModule, { dA: Tensor; dB: Tensor }>> = {};
        for (const [m, pair] of Object.entries(adapter.layers[l] ?? {}) as Array<[LoraModule, LoraPair]>) {
          const dA = g.tensor(pair.A.length);
          const dB = g.tensor(pair.B.length);
          layerGrads[m] = { dA, dB };
          const into = grad.layers[l][m];
          if (into) grads.push({ target: into.A, tensor: dA }, { target: into.B, tensor: dB });
        }
        d = layerBackward(ctx, buffers.layers[l], acts[l], layerGrads, d);
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

interface PassContext {
  g: GpuRecorder;
  shape: DecoderShape;
  rows: number;
  scale: number;
  r: number;
  cos: Tensor;
  sin: Tensor;
  segment: Tensor;
  prefix: number;
}

/** y = x W (+ bias) + s (x A^T) B^T; the branch's u = x A^T is kept. */
function project(c: PassContext, p: GpuProjection, pair: LoraPair | undefined, x: Tensor, branches: Partial<Record<LoraModule, Branch>>, module: LoraModule): Tensor {
  const { g, rows, r } = c;
  const { inDim, outDim } = p;
  const y = g.tensor(rows * outDim);
  g.matmul(x, p.weight, y, { M: rows, N: outDim, K: inDim, sam: inDim, sak: 1, sbk: outDim, sbn: 1 });
  if (p.bias) g.run('bias', rows * outDim, [rows * outDim, outDim], [], [p.bias, y]);
  if (!pair) return y;
  const A = g.tensor(pair.A.length, pair.A);
  const B = g.tensor(pair.B.length, pair.B);
  const u = g.tensor(rows * r);
  g.matmul(x, A, u, { M: rows, N: r, K: inDim, sam: inDim, sak: 1, sbk: 1, sbn: inDim });
  g.matmul(u, B, y, { M: rows, N: outDim, K: r, sam: r, sak: 1, sbk: 1, sbn: r, alpha: c.scale, accumulate: true });
  branches[module] = { A, B, u };
  return y;
}

/** dx += dy W^T + s (dy B) A; dB += s dy^T u; dA += (s dy B)^T x. */
function projectBack(c: PassContext, p: GpuProjection, branch: Branch | undefined, grads: { dA: Tensor; dB: Tensor } | undefined, dy: Tensor, x: Tensor, dx: Tensor): void {
  const { g, rows, r } = c;
  const { inDim, outDim } = p;
  g.matmul(dy, p.weight, dx, { M: rows, N: inDim, K: outDim, sam: outDim, sak: 1, sbk: 1, sbn: outDim, accumulate: true });
  if (!branch || !grads) return;
  g.matmul(dy, branch.u, grads.dB, { M: outDim, N: r, K: rows, sam: 1, sak: outDim, sbk: r, sbn: 1, alpha: c.scale, accumulate: true });
  const du = g.tensor(rows * r);
  g.matmul(dy, branch.B, du, { M: rows, N: r, K: outDim, sam: outDim, sak: 1, sbk: r, sbn: 1, alpha: c.scale });
  g.matmul(du, x, grads.dA, { M: r, N: inDim, K: rows, sam: 1, sak: r, sbk: inDim, sbn: 1, accumulate: true });
  g.matmul(du, branch.A, dx, { M: rows, N: inDim, K: r, sam: r, sak: 1, sbk: inDim, sbn: 1, accumulate: true });
}

function layerForward(c: PassContext, w: GpuLayer, lora: Partial<Record<LoraModule, LoraPair>>, x: Tensor): LayerActs & { out: Tensor } {
  const { g, rows, shape } = c;
  const { hiddenSize: H, intermediateSize: F, numHeads, numKvHeads, headDim: D, rmsNormEps: eps } = shape;
  const branches: Partial<Record<LoraModule, Branch>> = {};
  const proj = (m: LoraModule, input: Tensor) => project(c, w.projections[m], lora[m], input, branches, m);
  const h = g.tensor(rows * H);
  const inv1 = g.tensor(rows);
  g.run('rmsnorm', rows, [rows, H], [eps], [x, w.inputNorm, h, inv1]);
  let q = proj('q_proj', h);
  let k = proj('k_proj', h);
  const v = proj('v_proj', h);
  let qLin: Tensor | undefined;
  let kLin: Tensor | undefined;
  let qInv: Tensor | undefined;
  let kInv: Tensor | undefined;
  if (w.qNorm) {
    qLin = q;
    qInv = g.tensor(rows * numHeads);
    q = g.tensor(rows * numHeads * D);
    g.run('rmsnorm', rows * numHeads, [rows * numHeads, D], [eps], [qLin, w.qNorm, q, qInv]);
  }
  if (w.kNorm) {
    kLin = k;
    kInv = g.tensor(rows * numKvHeads);
    k = g.tensor(rows * numKvHeads * D);
    g.run('rmsnorm', rows * numKvHeads, [rows * numKvHeads, D], [eps], [kLin, w.kNorm, k, kInv]);
  }
  g.run('rope', (rows * numHeads * D) / 2, [rows, numHeads, D], [1], [c.cos, c.sin, q]);
  g.run('rope', (rows * numKvHeads * D) / 2, [rows, numKvHeads, D], [1], [c.cos, c.sin, k]);
  const probs = g.tensor(numHeads * rows * rows);
  const ctx = g.tensor(rows * numHeads * D);
  g.run('attention', numHeads * rows, [rows, numHeads, numKvHeads, D, c.prefix], [], [q, k, v, c.segment, probs, ctx]);
  const x1 = proj('o_proj', ctx);
  g.run('add', rows * H, [rows * H], [], [x, x1]);
  const h2 = g.tensor(rows * H);
  const inv2 = g.tensor(rows);
  g.run('rmsnorm', rows, [rows, H], [eps], [x1, w.postNorm, h2, inv2]);
  const gate = proj('gate_proj', h2);
  const up = proj('up_proj', h2);
  const act = g.tensor(rows * F);
  g.run('swiglu', rows * F, [rows * F], [], [gate, up, act]);
  const out = proj('down_proj', act);
  g.run('add', rows * H, [rows * H], [], [x1, out]);
  return { x, h, inv1, qLin, kLin, qInv, kInv, q, k, v, probs, ctx, x1, h2, inv2, gate, up, act, branches, out };
}

/** From d out to d x (returned), adding into the layer's A and B gradients. */
function layerBackward(c: PassContext, w: GpuLayer, a: LayerActs, grads: Partial<Record<LoraModule, { dA: Tensor; dB: Tensor }>>, dOut: Tensor): Tensor {
  const { g, rows, shape } = c;
  const { hiddenSize: H, intermediateSize: F, numHeads, numKvHeads, headDim: D } = shape;
  const back = (m: LoraModule, dy: Tensor, input: Tensor, dInput: Tensor) => projectBack(c, w.projections[m], a.branches[m], grads[m], dy, input, dInput);

  const dx1 = g.tensor(rows * H);
  g.run('add', rows * H, [rows * H], [], [dOut, dx1]);
  const dact = g.tensor(rows * F);
  back('down_proj', dOut, a.act, dact);
  const dgate = g.tensor(rows * F);
  const dup = g.tensor(rows * F);
  g.run('swigluBackward', rows * F, [rows * F], [], [dact, a.gate, a.up, dgate, dup]);
  const dh2 = g.tensor(rows * H);
  back('gate_proj', dgate, a.h2, dh2);
  back('up_proj', dup, a.h2, dh2);
  g.run('rmsnormBackward', rows, [rows, H], [], [dh2, a.x1, a.inv2, w.postNorm, dx1]);

  const dx = g.tensor(rows * H);
  g.run('add', rows * H, [rows * H], [], [dx1, dx]);
  const dctx = g.tensor(rows * numHeads * D);
  back('o_proj', dx1, a.ctx, dctx);
  const ds = g.tensor(numHeads * rows * rows);
  const dq = g.tensor(rows * numHeads * D);
  const dk = g.tensor(rows * numKvHeads * D);
  const dv = g.tensor(rows * numKvHeads * D);
  const attention = [rows, numHeads, numKvHeads, D, c.prefix];
  g.run('attentionBackwardQ', numHeads * rows, attention, [], [dctx, a.k, a.v, a.probs, ds, dq]);
  g.run('attentionBackwardKv', rows * numKvHeads * D, attention, [], [dctx, a.q, a.probs, ds, dk, dv]);
  g.run('rope', (rows * numHeads * D) / 2, [rows, numHeads, D], [-1], [c.cos, c.sin, dq]);
  g.run('rope', (rows * numKvHeads * D) / 2, [rows, numKvHeads, D], [-1], [c.cos, c.sin, dk]);
  let dqLin = dq;
  let dkLin = dk;
  if (w.qNorm && a.qLin && a.qInv) {
    dqLin = g.tensor(rows * numHeads * D);
    g.run('rmsnormBackward', rows * numHeads, [rows * numHeads, D], [], [dq, a.qLin, a.qInv, w.qNorm, dqLin]);
  }
  if (w.kNorm && a.kLin && a.kInv) {
    dkLin = g.tensor(rows * numKvHeads * D);
    g.run('rmsnormBackward', rows * numKvHeads, [rows * numKvHeads, D], [], [dk, a.kLin, a.kInv, w.kNorm, dkLin]);
  }
  const dh = g.tensor(rows * H);
  back('q_proj', dqLin, a.h, dh);
  back('k_proj', dkLin, a.h, dh);
  back('v_proj', dv, a.h, dh);
  g.run('rmsnormBackward', rows, [rows, H], [], [dh, a.x, a.inv1, w.inputNorm, dx]);
  return dx;
}
