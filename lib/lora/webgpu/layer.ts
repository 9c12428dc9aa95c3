/**
 * One decoder layer of the WebGPU LoRA pass (model.ts): its forward, keeping what the backward
 * reads (LayerActs), and its backward from d out to d x with the A and B gradients. The frozen
 * projections are read in their stored format (frozen-matrix.ts); the backward's products with
 * them are input gradients only (the base weights take no gradient).
 */
import type { LoraPair } from '../adapter.js';
import type { DecoderShape, LoraModule } from '../weights.js';
import { frozenMatmul, type FrozenMatrix } from './frozen-matrix.js';
import type { GpuRecorder, Tensor } from './gpu.js';

export interface GpuProjection {
  inDim: number;
  outDim: number;
  weight: FrozenMatrix;
  bias?: Tensor;
}

export interface GpuLayer {
  inputNorm: Tensor;
  postNorm: Tensor;
  qNorm?: Tensor;
  kNorm?: Tensor;
  projections: Record<LoraModule, GpuProjection>;
}

interface Branch {
  A: Tensor;
  B: Tensor;
  u: Tensor;
}

/** What a layer's backward reads of its forward. */
export interface LayerActs {
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

export type LayerGrads = Partial<Record<LoraModule, { dA: Tensor; dB: Tensor }>>;

export interface PassContext {
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
  frozenMatmul(g, x, p.weight, y, { M: rows, N: outDim, K: inDim, sam: inDim, sak: 1, transposed: false });
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
  frozenMatmul(g, dy, p.weight, dx, { M: rows, N: inDim, K: outDim, sam: outDim, sak: 1, transposed: true, accumulate: true });
  if (!branch || !grads) return;
  g.matmul(dy, branch.u, grads.dB, { M: outDim, N: r, K: rows, sam: 1, sak: outDim, sbk: r, sbn: 1, alpha: c.scale, accumulate: true });
  const du = g.tensor(rows * r);
  g.matmul(dy, branch.B, du, { M: rows, N: r, K: outDim, sam: outDim, sak: 1, sbk: r, sbn: 1, alpha: c.scale });
  g.matmul(du, x, grads.dA, { M: r, N: inDim, K: rows, sam: 1, sak: r, sbk: inDim, sbn: 1, accumulate: true });
  g.matmul(du, branch.A, dx, { M: rows, N: inDim, K: r, sam: r, sak: 1, sbk: inDim, sbn: 1, accumulate: true });
}

export function layerForward(c: PassContext, w: GpuLayer, lora: Partial<Record<LoraModule, LoraPair>>, x: Tensor): LayerActs & { out: Tensor } {
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
export function layerBackward(c: PassContext, w: GpuLayer, a: LayerActs, grads: LayerGrads, dOut: Tensor): Tensor {
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
