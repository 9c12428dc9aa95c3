/**
 * One pre-norm decoder layer, forward with the activations its backward needs, and that backward:
 *
 *   h  = RMSNorm(x)                    q, k, v = h Wq, h Wk, h Wv (+ bias, + LoRA)
 *   q, k = RoPE(qNorm?(q)), RoPE(kNorm?(k))     ctx = softmax(q k^T / sqrt(D) + causal) v
 *   x1 = x + ctx Wo                    h2 = RMSNorm(x1)
 *   x2 = x1 + (silu(h2 Wg) * h2 Wu) Wd
 */
import type { LoraAdapter, LoraPair } from './adapter.js';
import {
  attentionBackward,
  attentionForward,
  outerAdd,
  projectBackward,
  projectForward,
  rmsNormBackward,
  rmsNormForward,
  rope,
  swigluBackward,
  swigluForward,
  type Alloc,
  type AttentionShape,
  type Vec,
} from './kernels.js';
import type { DecoderLayerWeights, DecoderShape, LoraModule, Projection } from './weights.js';

/** Where each row sits: its rotary angles and which rows it may attend to (AttentionShape). */
export interface RowLayout {
  cos: Float64Array;
  sin: Float64Array;
  prefix: number;
  segment: Int32Array;
}

/** Everything the backward of one layer reads; `x` is the layer's input. */
export interface LayerCache {
  x: Vec;
  h: Vec;
  inv1: Vec;
  /** q and k as projected (before the per-head norms); only with those norms. */
  qLin?: Vec;
  kLin?: Vec;
  qInv?: Vec;
  kInv?: Vec;
  /** q and k after norm and rotary; v as projected. */
  q: Vec;
  k: Vec;
  v: Vec;
  probs: Vec;
  ctx: Vec;
  x1: Vec;
  h2: Vec;
  inv2: Vec;
  gate: Vec;
  up: Vec;
  act: Vec;
  /** x A^T of each adapted projection. */
  u: Partial<Record<LoraModule, Vec>>;
}

/** Runs the layer on x [rows, hidden]; returns its output and the cache. */
export function layerForward(
  x: Vec,
  rows: number,
  w: DecoderLayerWeights,
  lora: Partial<Record<LoraModule, LoraPair>>,
  adapter: LoraAdapter,
  shape: DecoderShape,
  table: RowLayout,
  alloc: Alloc,
): { out: Vec; cache: LayerCache } {
  const { hiddenSize: H, intermediateSize: F, numHeads, numKvHeads, headDim: D, rmsNormEps: eps } = shape;
  const r = adapter.config.r;
  const u: Partial<Record<LoraModule, Vec>> = {};
  const project = (module: LoraModule, input: Vec, outDim: number): Vec => {
    const y = alloc(rows * outDim);
    const pair = lora[module];
    if (pair) u[module] = alloc(rows * r);
    projectForward(input, rows, w[module], pair, adapter.scale, y, u[module]);
    return y;
  };

  const h = alloc(rows * H);
  const inv1 = alloc(rows);
  rmsNormForward(x, rows, H, w.inputNorm, eps, h, inv1);
  let q = project('q_proj', h, numHeads * D);
  let k = project('k_proj', h, numKvHeads * D);
  const v = project('v_proj', h, numKvHeads * D);
  let qLin: Vec | undefined;
  let kLin: Vec | undefined;
  let qInv: Vec | undefined;
  let kInv: Vec | undefined;
  if (w.qNorm) {
    qLin = q;
    qInv = alloc(rows * numHeads);
    q = alloc(rows * numHeads * D);
    rmsNormForward(qLin, rows * numHeads, D, w.qNorm, eps, q, qInv);
  }
  if (w.kNorm) {
    kLin = k;
    kInv = alloc(rows * numKvHeads);
    k = alloc(rows * numKvHeads * D);
    rmsNormForward(kLin, rows * numKvHeads, D, w.kNorm, eps, k, kInv);
  }
  rope(q, rows, numHeads, D, table.cos, table.sin, false);
  rope(k, rows, numKvHeads, D, table.cos, table.sin, false);
  const attention: AttentionShape = { rows, heads: numHeads, kvHeads: numKvHeads, headDim: D, prefix: table.prefix, segment: table.segment };
  const probs = alloc(numHeads * rows * rows);
  const ctx = alloc(rows * numHeads * D);
  attentionForward(q, k, v, attention, probs, ctx);
  const x1 = project('o_proj', ctx, H);
  for (let i = 0; i < rows * H; i++) x1[i] += x[i];

  const h2 = alloc(rows * H);
  const inv2 = alloc(rows);
  rmsNormForward(x1, rows, H, w.postNorm, eps, h2, inv2);
  const gate = project('gate_proj', h2, F);
  const up = project('up_proj', h2, F);
  const act = alloc(rows * F);
  swigluForward(gate, up, rows * F, act);
  const out = project('down_proj', act, H);
  for (let i = 0; i < rows * H; i++) out[i] += x1[i];
  return { out, cache: { x, h, inv1, qLin, kLin, qInv, kInv, q, k, v, probs, ctx, x1, h2, inv2, gate, up, act, u } };
}

/**
 * From d out [rows, hidden] to d x (returned) and into the layer's adapter gradient; with `full`
 * (the layer's weights' gradient), also d loss / d every weight of the layer.
 */
export function layerBackward(
  dOut: Vec,
  rows: number,
  c: LayerCache,
  w: DecoderLayerWeights,
  lora: Partial<Record<LoraModule, LoraPair>>,
  grad: Partial<Record<LoraModule, LoraPair>>,
  adapter: LoraAdapter,
  shape: DecoderShape,
  table: RowLayout,
  alloc: Alloc,
  full?: DecoderLayerWeights,
): Vec {
  const { hiddenSize: H, intermediateSize: F, numHeads, numKvHeads, headDim: D } = shape;
  const du = alloc(rows * adapter.config.r);
  const back = (module: LoraModule, dy: Vec, input: Vec, dInput: Vec) => {
    projectBackward(dy, input, c.u[module], rows, w[module], lora[module], grad[module], adapter.scale, dInput, du);
    if (full) projectionGrad(full[module], input, dy, rows);
  };

  // MLP: the residual passes dOut straight to x1.
  const dx1 = alloc(rows * H);
  dx1.set(dOut);
  const dact = alloc(rows * F);
  back('down_proj', dOut, c.act, dact);
  const dgate = alloc(rows * F);
  const dup = alloc(rows * F);
  swigluBackward(dact, c.gate, c.up, rows * F, dgate, dup);
  const dh2 = alloc(rows * H);
  back('gate_proj', dgate, c.h2, dh2);
  back('up_proj', dup, c.h2, dh2);
  rmsNormBackward(dh2, c.x1, c.inv2, rows, H, w.postNorm, dx1, full?.postNorm);

  // Attention: the residual passes dx1 straight to x.
  const dx = alloc(rows * H);
  dx.set(dx1);
  const dctx = alloc(rows * numHeads * D);
  back('o_proj', dx1, c.ctx, dctx);
  const dq = alloc(rows * numHeads * D);
  const dk = alloc(rows * numKvHeads * D);
  const dv = alloc(rows * numKvHeads * D);
  attentionBackward(dctx, c.q, c.k, c.v, c.probs, { rows, heads: numHeads, kvHeads: numKvHeads, headDim: D, prefix: table.prefix, segment: table.segment }, dq, dk, dv, new Float64Array(rows));
  rope(dq, rows, numHeads, D, table.cos, table.sin, true);
  rope(dk, rows, numKvHeads, D, table.cos, table.sin, true);
  let dqLin = dq;
  let dkLin = dk;
  if (w.qNorm && c.qLin && c.qInv) {
    dqLin = alloc(dq.length);
    rmsNormBackward(dq, c.qLin, c.qInv, rows * numHeads, D, w.qNorm, dqLin, full?.qNorm);
  }
  if (w.kNorm && c.kLin && c.kInv) {
    dkLin = alloc(dk.length);
    rmsNormBackward(dk, c.kLin, c.kInv, rows * numKvHeads, D, w.kNorm, dkLin, full?.kNorm);
  }
  const dh = alloc(rows * H);
  back('q_proj', dqLin, c.h, dh);
  back('k_proj', dkLin, c.h, dh);
  back('v_proj', dv, c.h, dh);
  rmsNormBackward(dh, c.x, c.inv1, rows, H, w.inputNorm, dx, full?.inputNorm);
  return dx;
}

/** Into a projection's gradient (a Projection of zeros, see zerosLikeDecoder): dW += x^T dy, dbias += the sum of dy's rows. */
function projectionGrad(g: Projection, x: Vec, dy: Vec, rows: number): void {
  outerAdd(x, rows, g.inDim, dy, g.outDim, g.weight as Float32Array);
  if (!g.bias) return;
  for (let t = 0; t < rows; t++) for (let o = 0; o < g.outDim; o++) g.bias[o] += dy[t * g.outDim + o];
}
