/**
 * The decoder's arithmetic written as ONNX ops, forward and backward side by side, for whichever
 * graph is being built: the per-layer and head graphs LoRA trains through (layer-graphs.ts) and
 * the whole-decoder graphs of full-parameter training (lora-graph.ts). Each op's backward is
 * written next to the forward it differentiates:
 *
 *   LoRA      dB = s dy^T u, du = s dy B, dA = du^T x, dx = dy W^T + du A   (u = x A^T)
 *   RMSNorm   dx = inv (dy g) - x inv^3 mean(dy g x)
 *   RoPE      dx = dy cos + rot^T(dy sin),  rot(x) = [-x2, x1],  rot^T(z) = [z2, -z1]
 *   softmax   ds = p (dp - sum(dp p))
 *   SwiGLU    d gate = d act up sig (1 + gate (1 - sig)),  d up = d act gate sig
 *   head      dz = onehot dlogp - p (dlogp + dH (log p + H)),  z = (hf / T) W the tempered logits
 *
 * Grouped-query heads attend without copying keys: the query heads sharing a key/value head are
 * consecutive, so [B, heads, S, D] is viewed as [B, kv_heads, groups * S, D]; the key gradient
 * then sums over the group by the same MatMul.
 */
import type { DecoderShape, LoraModule, Q4Matrix } from '../../weights/decoder.js';
import type { TrainingGraphBuilder } from './builder.js';

/** x W and dy W^T for one frozen (or, in full-parameter graphs, trained) weight. */
export interface Product {
  times(x: string): string;
  timesTransposed(dy: string): string;
}

/** A projection as a graph holds it: its product, bias, adapter and the names its gradients go out under. */
export interface ProjectionOps {
  inDim: number;
  outDim: number;
  product: Product;
  bias?: string;
  adapter?: { A: string; B: string; gradA: string; gradB: string };
  /** Full-parameter graphs: d loss / d W (and d b) go out under these names; `weight` is W's tensor. */
  grads?: { weightGrad: string; biasGrad?: string };
}

/** A layer's tensors in a graph. `normGrads`: full-parameter graphs write d loss / d each norm scale under these names. */
export interface LayerOps {
  inputNorm: string;
  postNorm: string;
  qNorm?: string;
  kNorm?: string;
  normGrads?: { input: string; post: string; q?: string; k?: string };
  proj: Record<LoraModule, ProjectionOps>;
}

/** The rotary tables, the attention bias (already tiled over the query groups) and the head shapes of the batch. */
export interface Attention {
  cos: string;
  sin: string;
  /** Absent in a backward phase, which reads the saved probabilities instead. */
  groupedBias?: string;
  /** [B, S, heads, D] and [B, S, kv_heads, D] as int64 shape tensors. */
  qShape: string;
  kvShape: string;
}

/** What a layer's backward reads of its forward. */
export interface LayerSaved {
  x: string;
  h: string;
  inv1: string;
  q4: string;
  k4: string;
  qInv?: string;
  kInv?: string;
  qg: string;
  kr: string;
  v4: string;
  probs: string;
  ctx2: string;
  x1: string;
  h2: string;
  inv2: string;
  gate: string;
  up: string;
  act: string;
  u: Partial<Record<LoraModule, string>>;
}

/** `lora`: the adapter's rank and scale s (y = x W + s x A^T B^T), when the graph has one. */
export function decoderOps(g: TrainingGraphBuilder, shape: DecoderShape, lora?: { r: number; scale: number }): DecoderOps {
  return new DecoderOps(g, shape, lora);
}

/**
 * The decoder's blocks on one graph builder: attention inputs, a layer forward and backward (and
 * the cheap recompute between them), the head forward and backward. Each block is built from
 * the op helpers below it (RMSNorm, RoPE, projections, head reshapes), forward beside backward.
 */
export class DecoderOps {
  /** Query heads per key/value head. */
  private readonly groups: number;
  private readonly one: string;
  /** The adapter's scale s (1 without an adapter). */
  private readonly s: string;
  private readonly attentionScale: string;
  private readonly epsilon: string;
  private readonly halves: string;
  private readonly lastAxis: string;

  constructor(
    private readonly g: TrainingGraphBuilder,
    private readonly shape: DecoderShape,
    private readonly lora?: { r: number; scale: number },
  ) {
    const { numHeads: Hq, numKvHeads: Hkv, headDim: D, rmsNormEps } = shape;
    this.groups = Hq / Hkv;
    this.one = g.scalar(1);
    this.s = g.scalar(lora?.scale ?? 1);
    this.attentionScale = g.scalar(1 / Math.sqrt(D));
    this.epsilon = g.scalar(rmsNormEps);
    this.halves = g.int64s([D / 2, D / 2]);
    this.lastAxis = g.int64s([-1]);
  }

  /** The rotary tables and bias inputs with the head shapes read off the batch (cos is [B, 1, S, D]). */
  attention(cos: string, sin: string, bias: string | undefined): Attention {
    const { g, groups } = this;
    const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = this.shape;
    const dims = g.node('Shape', [cos]);
    const bs = g.node('Concat', [g.node('Slice', [dims, g.int64s([0]), g.int64s([1])]), g.node('Slice', [dims, g.int64s([2]), g.int64s([3])])], { axis: 0 });
    return {
      cos,
      sin,
      ...(bias === undefined ? {} : { groupedBias: groups === 1 ? bias : g.node('Tile', [bias, g.int64s([1, 1, groups, 1])]) }),
      qShape: g.node('Concat', [bs, g.int64s([Hq, D])], { axis: 0 }),
      kvShape: g.node('Concat', [bs, g.int64s([Hkv, D])], { axis: 0 }),
    };
  }

  /** One decoder layer on x [B * S, H]; `withOutput` false leaves out the last projection (a recompute needs only what the backward reads). */
  layerForward(w: LayerOps, x: string, at: Attention, withOutput: boolean): { out?: string; saved: LayerSaved } {
    const { g } = this;
    const { numHeads: Hq, headDim: D } = this.shape;
    const u: Partial<Record<LoraModule, string>> = {};
    const { y: h, inv: inv1 } = this.rms(x, w.inputNorm);
    const q4 = this.toHeads(this.project(w.proj.q_proj, h, u, 'q_proj'), at.qShape);
    const k4 = this.toHeads(this.project(w.proj.k_proj, h, u, 'k_proj'), at.kvShape);
    const v4 = this.toHeads(this.project(w.proj.v_proj, h, u, 'v_proj'), at.kvShape);
    const qNormed = w.qNorm ? this.rms(q4, w.qNorm) : undefined;
    const kNormed = w.kNorm ? this.rms(k4, w.kNorm) : undefined;
    const qg = this.byKvHead(this.rope(qNormed?.y ?? q4, at));
    const kr = this.rope(kNormed?.y ?? k4, at);
    const scores = this.add(this.mul(this.matmul(qg, this.T(kr, [0, 1, 3, 2])), this.attentionScale), at.groupedBias!);
    const probs = g.node('Softmax', [scores], { axis: -1 });
    const ctx2 = this.fromHeads(this.byQueryHead(this.matmul(probs, v4)), Hq * D);
    const x1 = this.add(x, this.project(w.proj.o_proj, ctx2, u, 'o_proj'));
    const { y: h2, inv: inv2 } = this.rms(x1, w.postNorm);
    const gate = this.project(w.proj.gate_proj, h2, u, 'gate_proj');
    const up = this.project(w.proj.up_proj, h2, u, 'up_proj');
    const act = this.mul(this.mul(gate, g.node('Sigmoid', [gate])), up);
    const saved: LayerSaved = { x, h, inv1, q4, k4, ...(qNormed ? { qInv: qNormed.inv } : {}), ...(kNormed ? { kInv: kNormed.inv } : {}), qg, kr, v4, probs, ctx2, x1, h2, inv2, gate, up, act, u };
    if (withOutput) return { out: this.add(x1, this.project(w.proj.down_proj, act, u, 'down_proj')), saved };
    // The down projection's adapter input is all its backward reads of it.
    const down = w.proj.down_proj.adapter;
    if (down) u.down_proj = this.matmul(act, this.T(down.A, [1, 0]));
    return { saved };
  }

  /**
   * The saved tensors an element-wise pass makes (the normed inputs, the rotated queries and
   * keys, the gated activation), written again in the phase being built from those a matmul or
   * softmax made, by the same ops: a graph that keeps activations for its backward then keeps
   * only those.
   */
  recomputeCheap(w: LayerOps, t: LayerSaved, at: Attention): LayerSaved {
    const qNormed = w.qNorm ? this.mul(this.mul(t.q4, t.qInv!), w.qNorm) : t.q4;
    const kNormed = w.kNorm ? this.mul(this.mul(t.k4, t.kInv!), w.kNorm) : t.k4;
    return {
      ...t,
      h: this.mul(this.mul(t.x, t.inv1), w.inputNorm),
      h2: this.mul(this.mul(t.x1, t.inv2), w.postNorm),
      act: this.mul(this.mul(t.gate, this.g.node('Sigmoid', [t.gate])), t.up),
      qg: this.byKvHead(this.rope(qNormed, at)),
      kr: this.rope(kNormed, at),
    };
  }

  /** From d loss / d the layer's output to its gradients; returns d loss / d x. */
  layerBackward(w: LayerOps, t: LayerSaved, dy: string, at: Attention): string {
    const dx1 = this.mlpBackward(w, t, dy);
    const { dq4, dk4, dv4 } = this.attentionBackward(w, t, dx1, at);
    const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = this.shape;
    const dhq = this.projectBack(w.proj.q_proj, t.h, t.u.q_proj, this.fromHeads(dq4, Hq * D));
    const dhk = this.projectBack(w.proj.k_proj, t.h, t.u.k_proj, this.fromHeads(dk4, Hkv * D));
    const dhv = this.projectBack(w.proj.v_proj, t.h, t.u.v_proj, this.fromHeads(dv4, Hkv * D));
    const grads = w.normGrads;
    return this.add(dx1, this.rmsBack(t.x, t.inv1, w.inputNorm, this.add(this.add(dhq, dhk), dhv), grads && { name: grads.input, axes: [0] }));
  }

  /** The MLP half of a layer's backward: from d loss / d its output to d loss / d x1 (the attention residual). */
  private mlpBackward(w: LayerOps, t: LayerSaved, dy: string): string {
    const { mul, add, sub, one } = this;
    const grads = w.normGrads;
    const dAct = this.projectBack(w.proj.down_proj, t.act, t.u.down_proj, dy);
    const sig = this.g.node('Sigmoid', [t.gate]);
    const dGate = mul(dAct, mul(t.up, mul(sig, add(one, mul(t.gate, sub(one, sig))))));
    const dUp = mul(dAct, mul(t.gate, sig));
    const dh2 = add(this.projectBack(w.proj.gate_proj, t.h2, t.u.gate_proj, dGate), this.projectBack(w.proj.up_proj, t.h2, t.u.up_proj, dUp));
    return add(dy, this.rmsBack(t.x1, t.inv2, w.postNorm, dh2, grads && { name: grads.post, axes: [0] }));
  }

  /** The attention half: from d loss / d x1 through o_proj, softmax and RoPE (and the q/k norms) to the heads' q, k and v. */
  private attentionBackward(w: LayerOps, t: LayerSaved, dx1: string, at: Attention): { dq4: string; dk4: string; dv4: string } {
    const { mul, sub, matmul, T } = this;
    const grads = w.normGrads;
    const dCtxg = this.byKvHead(this.toHeads(this.projectBack(w.proj.o_proj, t.ctx2, t.u.o_proj, dx1), at.qShape));
    const dProbs = matmul(dCtxg, T(t.v4, [0, 1, 3, 2]));
    const dv4 = matmul(T(t.probs, [0, 1, 3, 2]), dCtxg);
    const dScores = mul(mul(t.probs, sub(dProbs, this.g.node('ReduceSum', [mul(dProbs, t.probs), this.lastAxis], { keepdims: 1 }))), this.attentionScale);
    let dq4 = this.ropeBack(this.byQueryHead(matmul(dScores, t.kr)), at);
    let dk4 = this.ropeBack(matmul(T(dScores, [0, 1, 3, 2]), t.qg), at);
    if (w.qNorm) dq4 = this.rmsBack(t.q4, t.qInv!, w.qNorm, dq4, grads?.q ? { name: grads.q, axes: [0, 1, 2] } : undefined);
    if (w.kNorm) dk4 = this.rmsBack(t.k4, t.kInv!, w.kNorm, dk4, grads?.k ? { name: grads.k, axes: [0, 1, 2] } : undefined);
    return { dq4, dk4, dv4 };
  }

  /**
   * The final norm and the head at the scored rows `hidden` [rows, H]: log p of each row's target
   * under softmax(z / T), and the entropy. `head` is [V, H] when tied (the embedding), else [H, V].
   */
  headForward(hidden: string, finalNorm: string, head: string, tied: boolean, targets: string, invT: string, names: { logps: string; entropies: string }) {
    const { g, mul, lastAxis } = this;
    const { y: hf, inv } = this.rms(hidden, finalNorm);
    // z / T as (hf / T) W: the temperature on [rows, H] rather than on the [rows, vocab] logits.
    const scaled = mul(hf, invT);
    const logits = tied ? g.node('Gemm', [scaled, head], { transB: 1 }) : this.matmul(scaled, head);
    const logSoftmax = g.node('LogSoftmax', [logits], { axis: -1 });
    const logps = g.node('Reshape', [g.node('GatherElements', [logSoftmax, this.column(targets)], { axis: 1 }), g.int64s([-1])], {}, names.logps);
    const probs = g.node('Exp', [logSoftmax]);
    const entropies = g.node('Neg', [g.node('ReduceSum', [mul(probs, logSoftmax), lastAxis], { keepdims: 0 })], {}, names.entropies);
    return { scaled, inv, logSoftmax, probs, logps, entropies };
  }

  /**
   * d log p(target) / d hidden per row ([rows, H]): headBackward at d loss / d logp = 1 and
   * d loss / d H = 0, in the forward's own run. The tempered logits' gradient is onehot - p, so
   * through the head it is (E[target] - p E) / T: one product and a gather of rows, where the
   * backward would recompute the logits and build their [rows, vocab] gradient. A row's d hidden
   * is then its d loss / d logp times this (the norm's backward is linear in what comes in).
   */
  headLogpGradient(f: { hidden: string; finalNorm: string; head: string; tied: boolean; targets: string; invT: string }, fwd: { inv: string; probs: string }): string {
    const { g, mul, sub } = this;
    // The head as [V, H] (tied: the embedding) or [H, V].
    const expected = f.tied ? this.matmul(fwd.probs, f.head) : g.node('Gemm', [fwd.probs, f.head], { transB: 1 });
    const target = f.tied ? g.node('Gather', [f.head, f.targets], { axis: 0 }) : g.node('Transpose', [g.node('Gather', [f.head, f.targets], { axis: 1 })], { perm: [1, 0] });
    return this.rmsBack(f.hidden, fwd.inv, f.finalNorm, mul(sub(target, expected), f.invT));
  }

  /**
   * d loss / d hidden from d loss / d logp and d loss / d H per row. `grads`: full-parameter graphs
   * write d final norm, and d head (untied: [H, V] under `head`; tied: the head's share of d
   * embedding, [V, H], returned for the caller to add to the embedding's).
   */
  headBackward(
    f: { hidden: string; finalNorm: string; head: string; tied: boolean; targets: string; invT: string },
    fwd: { scaled: string; inv: string; logSoftmax: string; entropies: string },
    dlogps: string,
    dentropies: string,
    grads?: { finalNorm: string; head?: string },
  ): { dHidden: string; dTiedHead?: string } {
    const { g, mul, add, column } = this;
    const { hiddenSize: H, vocabSize: V } = this.shape;
    const probs = g.node('Exp', [fwd.logSoftmax]);
    const dl = column(dlogps);
    // The one-hot term lands on each row's target alone: a scatter-add, not a [rows, vocab] mask.
    const spread = g.node('Neg', [mul(probs, add(dl, mul(column(dentropies), add(fwd.logSoftmax, column(fwd.entropies)))))]);
    // dz is d loss / d the tempered logits (hf / T) W: 1 / T lands on dhf ([rows, H]), and the head's own gradient is (hf / T)^T dz.
    const dz = g.node('ScatterElements', [spread, column(f.targets), dl], { axis: 1, reduction: 'add' });
    const dhf = mul(f.tied ? this.matmul(dz, f.head) : g.node('Gemm', [dz, f.head], { transB: 1 }), f.invT);
    let dTiedHead: string | undefined;
    if (grads && !f.tied) g.output(g.node('Gemm', [fwd.scaled, dz], { transA: 1 }, grads.head), [H, V]);
    if (grads && f.tied) dTiedHead = g.node('Gemm', [dz, fwd.scaled], { transA: 1 });
    const dHidden = this.rmsBack(f.hidden, fwd.inv, f.finalNorm, dhf, grads && { name: grads.finalNorm, axes: [0] });
    return { dHidden, ...(dTiedHead ? { dTiedHead } : {}) };
  }

  private rms(x: string, scale: string): { y: string; inv: string } {
    const inv = this.g.node('Div', [this.one, this.g.node('Sqrt', [this.add(this.lastAxisMean(this.mul(x, x)), this.epsilon)])]);
    return { y: this.mul(this.mul(x, inv), scale), inv };
  }

  /** `grad`: where d scale goes out, summed over `axes` (every axis but the last). */
  private rmsBack(x: string, inv: string, scale: string, dy: string, grad?: { name: string; axes: number[] }): string {
    const { g, mul, sub } = this;
    if (grad) g.output(g.node('ReduceSum', [mul(dy, mul(x, inv)), g.int64s(grad.axes)], { keepdims: 0 }, grad.name), ['hidden']);
    const gw = mul(dy, scale);
    const m = this.lastAxisMean(mul(gw, x));
    return sub(mul(gw, inv), mul(x, mul(m, mul(inv, mul(inv, inv)))));
  }

  private rope(x: string, at: Attention): string {
    const { g } = this;
    const [x1, x2] = g.nodeN('Split', [x, this.halves], 2, { axis: -1 });
    return this.add(this.mul(x, at.cos), this.mul(g.node('Concat', [g.node('Neg', [x2]), x1], { axis: -1 }), at.sin));
  }

  private ropeBack(dy: string, at: Attention): string {
    const { g } = this;
    const [z1, z2] = g.nodeN('Split', [this.mul(dy, at.sin), this.halves], 2, { axis: -1 });
    return this.add(this.mul(dy, at.cos), g.node('Concat', [z2, g.node('Neg', [z1])], { axis: -1 }));
  }

  private project(p: ProjectionOps, x: string, u: Partial<Record<LoraModule, string>>, m: LoraModule): string {
    let y = p.product.times(x);
    if (p.bias) y = this.add(y, p.bias);
    if (!p.adapter) return y;
    u[m] = this.matmul(x, this.T(p.adapter.A, [1, 0]));
    // The scale on u ([tokens, r]) rather than on u B^T ([tokens, out]): the same product, r / out of the element-wise work.
    return this.add(y, this.matmul(this.mul(u[m]!, this.s), this.T(p.adapter.B, [1, 0])));
  }

  /** Writes the projection's gradients; returns dx. */
  private projectBack(p: ProjectionOps, x: string, u: string | undefined, dy: string): string {
    const { g, s } = this;
    if (p.adapter && u) {
      const { A, B, gradA, gradB } = p.adapter;
      g.output(g.node('Mul', [g.node('Gemm', [dy, u], { transA: 1 }), s], {}, gradB), [p.outDim, this.lora!.r]);
      const du = this.mul(this.matmul(dy, B), s);
      g.output(g.node('Gemm', [du, x], { transA: 1 }, gradA), [this.lora!.r, p.inDim]);
      return this.add(p.product.timesTransposed(dy), this.matmul(du, A));
    }
    if (p.grads) {
      g.output(g.node('Gemm', [x, dy], { transA: 1 }, p.grads.weightGrad), [p.inDim, p.outDim]);
      if (p.grads.biasGrad) g.output(g.node('ReduceSum', [dy, g.int64s([0])], { keepdims: 0 }, p.grads.biasGrad), [p.outDim]);
    }
    return p.product.timesTransposed(dy);
  }

  private toHeads(x2: string, shapeTensor: string): string {
    return this.T(this.g.node('Reshape', [x2, shapeTensor]), [0, 2, 1, 3]);
  }

  private fromHeads(x4: string, width: number): string {
    return this.reshape(this.T(x4, [0, 2, 1, 3]), [-1, width]);
  }

  private byKvHead(x4: string): string {
    return this.groups === 1 ? x4 : this.reshape(x4, [0, this.shape.numKvHeads, -1, this.shape.headDim]);
  }

  private byQueryHead(x4: string): string {
    return this.groups === 1 ? x4 : this.reshape(x4, [0, this.shape.numHeads, -1, this.shape.headDim]);
  }

  // One-op helpers, bound so a block can take them apart (`const { mul, add } = this`).
  private readonly T = (x: string, perm: number[]) => this.g.node('Transpose', [x], { perm });
  private readonly mul = (a: string, b: string) => this.g.node('Mul', [a, b]);
  private readonly add = (a: string, b: string) => this.g.node('Add', [a, b]);
  private readonly sub = (a: string, b: string) => this.g.node('Sub', [a, b]);
  private readonly matmul = (a: string, b: string) => this.g.node('MatMul', [a, b]);
  private readonly reshape = (x: string, dims: number[]) => this.g.node('Reshape', [x, this.g.int64s(dims)]);
  private readonly lastAxisMean = (x: string) => this.g.node('ReduceMean', [x, this.lastAxis], { keepdims: 1 });
  private readonly column = (v: string) => this.g.node('Unsqueeze', [v, this.g.int64s([1])]);
}

/** x W and dy W^T for a float weight tensor [in, out] in the graph. */
export function floatProduct(g: TrainingGraphBuilder, weight: string): Product {
  return { times: (x) => g.node('MatMul', [x, weight]), timesTransposed: (dy) => g.node('Gemm', [dy, weight], { transB: 1 }) };
}

/**
 * x W and dy W^T for an fp16 weight tensor [in, out]: widened to the graph's float type where each
 * product runs, so the forward and backward each widen their own copy for the run (a backward
 * reading the forward's would keep every layer's widened weights as saved activations).
 */
export function halfProduct(g: TrainingGraphBuilder, weight: string): Product {
  return { times: (x) => g.node('MatMul', [x, g.toFloat(weight)]), timesTransposed: (dy) => g.node('Gemm', [dy, g.toFloat(weight)], { transB: 1 }) };
}

/** A 4-bit weight's tensors in a graph: the packed blocks [N, blocks, blockSize / 2] (uint8), scales [N * blocks], zero points. */
export interface Q4Tensors {
  packed: string;
  scales: string;
  zeros?: string;
}

/**
 * x W on the stored blocks (MatMulNBits), and dy W^T, which has no 4-bit op: the same bytes
 * unpacked in the graph into W^T [N, K] ((q - zero) * scale per block), then a plain MatMul.
 */
export function q4Product(g: TrainingGraphBuilder, w: Pick<Q4Matrix, 'K' | 'N' | 'blockSize' | 'zeroPoints'>, t: Q4Tensors): Product {
  const blocks = Math.ceil(w.K / w.blockSize);
  const nibbles = (bytes: string, dims: number[]) => {
    const lo = g.node('BitwiseAnd', [bytes, g.uint8s([15])]);
    const hi = g.node('BitShift', [bytes, g.uint8s([4])], { direction: 'RIGHT' });
    const pairs = g.node('Concat', [g.node('Unsqueeze', [lo, g.int64s([-1])]), g.node('Unsqueeze', [hi, g.int64s([-1])])], { axis: -1 });
    return g.toFloat(g.node('Reshape', [pairs, g.int64s(dims)]));
  };
  return {
    times: (x) => g.nodeN('MatMulNBits', [x, t.packed, t.scales, ...(t.zeros ? [t.zeros] : [])], 1, { K: w.K, N: w.N, bits: 4, block_size: w.blockSize }, undefined, 'com.microsoft')[0],
    timesTransposed: (dy) => {
      const q = nibbles(t.packed, [w.N, blocks, w.blockSize]);
      const zero = t.zeros ? g.node('Slice', [nibbles(t.zeros, [w.N, -1]), g.int64s([0]), g.int64s([blocks]), g.int64s([1])]) : g.scalar(8);
      const zeroColumn = t.zeros ? g.node('Unsqueeze', [zero, g.int64s([-1])]) : zero;
      const scales = g.node('Reshape', [t.scales, g.int64s([w.N, blocks, 1])]);
      let wt = g.node('Reshape', [g.node('Mul', [g.node('Sub', [q, zeroColumn]), scales]), g.int64s([w.N, blocks * w.blockSize])]);
      if (blocks * w.blockSize !== w.K) wt = g.node('Slice', [wt, g.int64s([0]), g.int64s([w.K]), g.int64s([1])]);
      return g.node('MatMul', [dy, wt]);
    },
  };
}
