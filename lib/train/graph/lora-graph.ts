/**
 * The training step of a LoRA adapter on a Llama-family decoder as two ONNX graphs that
 * onnxruntime runs on its own kernels: the forward, with every A and B a graph input, to the
 * log-probs and entropies of the scored tokens; and the backward, written op by op next to the
 * forward it differentiates, from d loss / d logp (and d loss / d entropy) to every A and B.
 *
 *   x0 = E[ids]                              h = RMSNorm(x) g           (per layer)
 *   q, k, v = h W (+ b) + s (h A^T) B^T      q, k = RoPE(qNorm?(q)), RoPE(kNorm?(k))
 *   ctx = softmax(q k^T / sqrt(D) + causal) v          x1 = x + ctx Wo (+ LoRA)
 *   x2 = x1 + (silu(h2 Wg) * h2 Wu) Wd, h2 = RMSNorm(x1)
 *   z = RMSNorm(x_L[rows]) head;  logp = log softmax(z / T)[target];  H = -sum p log p
 *
 * The backward of each op, with dy the gradient of its output:
 *   LoRA      dB = s dy^T u, du = s dy B, dA = du^T x, dx = dy W^T + du A   (u = x A^T)
 *   RMSNorm   dx = inv (dy g) - x inv^3 mean(dy g x)
 *   RoPE      dx = dy cos + rot^T(dy sin),  rot(x) = [-x2, x1],  rot^T(z) = [z2, -z1]
 *   softmax   ds = p (dp - sum(dp p))
 *   SwiGLU    d gate = d act up sig (1 + gate (1 - sig)),  d up = d act gate sig
 *   head      dz = (onehot dlogp - p (dlogp + dH (log p + H))) / T
 *
 * Grouped-query heads attend without copying keys: the query heads sharing a key/value head are
 * consecutive, so [B, heads, S, D] is viewed as [B, kv_heads, groups * S, D]; the key gradient
 * then sums over the group by the same MatMul. Positions (the rotary tables) and the attention
 * bias are inputs, so a row can hold a prompt and several completions that each see the prompt
 * and themselves. The head runs only at the rows that predict a scored token (`score_rows`).
 *
 * The frozen weights are the graphs' initializers in float32 (or float64). 4-bit MatMulNBits
 * weights stay packed: the forward runs MatMulNBits, and the backward's transposed product, which
 * has no 4-bit op, reads the same blocks as a uint4 [N, K] matrix (W^T) through DequantizeLinear.
 */
import type { LoraModule, DecoderWeights, Projection } from '../../lora/weights.js';
import { LORA_MODULES } from '../../lora/weights.js';
import { UnsupportedError } from '../../errors.js';
import { dequantize } from '../../policy/onnx/structure/read-weights.js';
import { loraInputName } from '../../policy/onnx/structure/lora-inputs.js';
import type { Q4Matrix } from '../../lora/weights.js';
import { TrainingGraphBuilder, UINT4, UINT8, type Precision, type TrainingModels } from './builder.js';

export interface LoraGraphConfig {
  r: number;
  /** s in y = x W + s x A^T B^T. */
  scale: number;
  targetModules: readonly LoraModule[];
}

/** The graph inputs and outputs, by name. */
export const GRAPH_IO = {
  inputIds: 'input_ids',
  cos: 'rope_cos',
  sin: 'rope_sin',
  bias: 'attn_bias',
  rows: 'score_rows',
  targets: 'targets',
  invTemperature: 'inv_temperature',
  logps: 'logps',
  entropies: 'entropies',
  dlogps: 'dlogps',
  dentropies: 'dentropies',
} as const;

/** The same names the sampler's graph takes them by (addLoraInputs), so one set of arrays feeds both. */
export const loraInput = loraInputName;
export const loraGradOutput = (layer: number, module: LoraModule, which: 'A' | 'B') => `grad.${layer}.${module}.${which}`;

interface LayerTensors {
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

export function buildLoraGraphs(weights: DecoderWeights, lora: LoraGraphConfig, precision: Precision = 'float32'): TrainingModels {
  return buildTrainingGraphs(weights, lora, precision);
}

/**
 * Full-parameter training (pretraining): the same graphs with no adapter, every weight a forward
 * input (named as decoderParameters lists them) and the backward's outputs d loss / d every
 * weight (`grad.<name>`). Every weight is float (decoderParameters refuses 4-bit projections).
 *
 *   projection  dW = x^T dy, db = sum_rows dy      RMSNorm  dg = sum_rows dy x inv
 *   head        tied: dE += dz^T hf, untied: dHead = hf^T dz
 *   embedding   dE[ids[i]] += dx0[i]
 */
export function buildDecoderGraphs(weights: DecoderWeights, precision: Precision = 'float32'): TrainingModels {
  return buildTrainingGraphs(weights, undefined, precision);
}

/** A decoder weight as a full-parameter graph takes it: its input name and dims. */
export interface DecoderParameter {
  name: string;
  tensor: Float32Array;
  dims: number[];
}

export const weightGradOutput = (name: string) => `grad.${name}`;

/** Every weight of the decoder with its graph input name, in decoderTensors' order. */
export function decoderParameters(weights: DecoderWeights): DecoderParameter[] {
  const { hiddenSize: H, vocabSize: V, headDim: D } = weights.shape;
  const out: DecoderParameter[] = [{ name: 'embedding', tensor: weights.embedding, dims: [V, H] }];
  weights.layers.forEach((layer, l) => {
    out.push({ name: `norm.${l}.input`, tensor: layer.inputNorm, dims: [H] }, { name: `norm.${l}.post`, tensor: layer.postNorm, dims: [H] });
    if (layer.qNorm) out.push({ name: `norm.${l}.q`, tensor: layer.qNorm, dims: [D] });
    if (layer.kNorm) out.push({ name: `norm.${l}.k`, tensor: layer.kNorm, dims: [D] });
    for (const m of LORA_MODULES) {
      const { weight, bias, inDim, outDim } = layer[m];
      if (!(weight instanceof Float32Array)) throw new UnsupportedError(`Layer ${l} ${m} is 4-bit; full-parameter training needs fp32 or fp16 weights.`);
      out.push({ name: `w.${l}.${m}`, tensor: weight, dims: [inDim, outDim] });
      if (bias) out.push({ name: `b.${l}.${m}`, tensor: bias, dims: [outDim] });
    }
  });
  out.push({ name: 'norm.final', tensor: weights.finalNorm, dims: [H] });
  if (weights.lmHead) out.push({ name: 'lm_head', tensor: weights.lmHead, dims: [H, V] });
  return out;
}

/** How many weights full-parameter training updates (every tensor decoderParameters names). */
export function decoderParameterCount(weights: DecoderWeights): number {
  return decoderParameters(weights).reduce((n, p) => n + p.tensor.length, 0);
}

/** `lora` absent: full-parameter graphs (buildDecoderGraphs). */
function buildTrainingGraphs(weights: DecoderWeights, lora: LoraGraphConfig | undefined, precision: Precision): TrainingModels {
  const g = new TrainingGraphBuilder(precision);
  const full = lora === undefined;
  /** A weight: an input the backward differentiates in full-parameter graphs, a frozen initializer otherwise. */
  const param = (name: string, values: Float32Array, dims: number[]) => (full ? g.input(name, 'float', dims) : g.floats(name, values, dims));
  const { hiddenSize: H, numHeads: Hq, numKvHeads: Hkv, headDim: D, vocabSize: V, rmsNormEps: eps } = weights.shape;
  const groups = Hq / Hkv;
  const targets = new Set(lora?.targetModules ?? []);
  const io = GRAPH_IO;

  const ids = g.input(io.inputIds, 'int64', ['batch', 'sequence']);
  const cos = g.input(io.cos, 'float', ['batch', 1, 'sequence', D]);
  const sin = g.input(io.sin, 'float', ['batch', 1, 'sequence', D]);
  const bias = g.input(io.bias, 'float', ['batch', 1, 'sequence', 'sequence']);
  const rows = g.input(io.rows, 'int64', ['scored']);
  const tokens = g.input(io.targets, 'int64', ['scored']);
  const invT = g.input(io.invTemperature, 'float', []);
  const A = new Map<string, string>();
  const B = new Map<string, string>();
  weights.layers.forEach((layer, l) => {
    for (const m of LORA_MODULES) {
      if (!targets.has(m)) continue;
      const { inDim, outDim } = layer[m];
      A.set(`${l}.${m}`, g.input(loraInput(l, m, 'A'), 'float', [lora!.r, inDim]));
      B.set(`${l}.${m}`, g.input(loraInput(l, m, 'B'), 'float', [outDim, lora!.r]));
    }
  });

  const one = g.scalar(1);
  const s = g.scalar(lora?.scale ?? 1);
  const attentionScale = g.scalar(1 / Math.sqrt(D));
  const epsilon = g.scalar(eps);
  const T = (x: string, perm: number[]) => g.node('Transpose', [x], { perm });
  const mul = (a: string, b: string) => g.node('Mul', [a, b]);
  const add = (a: string, b: string) => g.node('Add', [a, b]);
  const sub = (a: string, b: string) => g.node('Sub', [a, b]);
  const matmul = (a: string, b: string) => g.node('MatMul', [a, b]);
  const reshape = (x: string, shape: string) => g.node('Reshape', [x, shape]);
  const flat = (width: number) => g.int64s([-1, width]);
  const lastAxis = g.int64s([-1]);
  const lastAxisMean = (x: string) => g.node('ReduceMean', [x, lastAxis], { keepdims: 1 });
  /** [B, S, heads, D] for the phase being written (each graph reads the batch shape itself). */
  const headShapes = () => {
    const bs = g.node('Shape', [ids]);
    return { q: g.node('Concat', [bs, g.int64s([Hq, D])], { axis: 0 }), kv: g.node('Concat', [bs, g.int64s([Hkv, D])], { axis: 0 }) };
  };

  /** x W and, in the backward, dy W^T: float weights as MatMul and Gemm, 4-bit ones kept packed. */
  const frozen = new Map<string, { times(x: string): string; timesTransposed(dy: string): string }>();
  const product = (name: string, p: Projection) => {
    const w = p.weight;
    if (w instanceof Float32Array || full || !packable(w, precision)) {
      const matrix = param(name, w instanceof Float32Array ? w : dequantize(w), [p.inDim, p.outDim]);
      return { times: (x: string) => matmul(x, matrix), timesTransposed: (dy: string) => g.node('Gemm', [dy, matrix], { transB: 1 }) };
    }
    // Forward: MatMulNBits on the stored blocks. Backward: the same bytes read as a uint4 [N, K]
    // matrix, which is W^T, dequantized by DequantizeLinear's blocks (onnxruntime has no
    // transposed MatMulNBits), then a plain MatMul.
    const blocks = w.K / w.blockSize;
    const packed = g.raw(`${name}.q4`, UINT8, [w.N, blocks, w.blockSize / 2], w.packed);
    const scales = g.floats(`${name}.scales`, w.scales, [w.N * blocks]);
    const zeros = w.zeroPoints ? g.raw(`${name}.zeros`, UINT8, [w.N * (blocks / 2)], w.zeroPoints) : undefined;
    const nibbles = g.raw(`${name}.q4t`, UINT4, [w.N, w.K], w.packed);
    const scales2 = g.floats(`${name}.scales2`, w.scales, [w.N, blocks]);
    const zeros4 = g.raw(`${name}.zeros4`, UINT4, [w.N, blocks], w.zeroPoints ?? new Uint8Array((w.N * blocks) / 2).fill(0x88));
    return {
      times: (x: string) => g.nodeN('MatMulNBits', [x, packed, scales, ...(zeros ? [zeros] : [])], 1, { K: w.K, N: w.N, bits: 4, block_size: w.blockSize }, undefined, 'com.microsoft')[0],
      timesTransposed: (dy: string) => matmul(dy, g.node('DequantizeLinear', [nibbles, scales2, zeros4], { axis: 1, block_size: w.blockSize })),
    };
  };
  const normScale = (name: string, values: Float32Array) => param(name, values, [values.length]);

  const rms = (x: string, scale: string) => {
    const inv = g.node('Div', [one, g.node('Sqrt', [add(lastAxisMean(mul(x, x)), epsilon)])]);
    return { y: mul(mul(x, inv), scale), inv };
  };
  /** `axes`: every axis but the last, which a full-parameter graph sums d scale over. */
  const rmsBack = (x: string, inv: string, scale: string, dy: string, axes: number[]) => {
    if (full) g.output(g.node('ReduceSum', [mul(dy, mul(x, inv)), g.int64s(axes)], { keepdims: 0 }, weightGradOutput(scale)), ['hidden']);
    const gw = mul(dy, scale);
    const m = lastAxisMean(mul(gw, x));
    return sub(mul(gw, inv), mul(x, mul(m, mul(inv, mul(inv, inv)))));
  };
  const halves = g.int64s([D / 2, D / 2]);
  const rope = (x: string) => {
    const [x1, x2] = g.nodeN('Split', [x, halves], 2, { axis: -1 });
    return add(mul(x, cos), mul(g.node('Concat', [g.node('Neg', [x2]), x1], { axis: -1 }), sin));
  };
  const ropeBack = (dy: string) => {
    const [z1, z2] = g.nodeN('Split', [mul(dy, sin), halves], 2, { axis: -1 });
    return add(mul(dy, cos), g.node('Concat', [z2, g.node('Neg', [z1])], { axis: -1 }));
  };

  const project = (l: number, m: LoraModule, p: Projection, x: string, u: Partial<Record<LoraModule, string>>) => {
    const w = product(`w.${l}.${m}`, p);
    frozen.set(`${l}.${m}`, w);
    let y = w.times(x);
    if (p.bias) y = add(y, param(`b.${l}.${m}`, p.bias, [p.outDim]));
    const a = A.get(`${l}.${m}`);
    if (!a) return y;
    u[m] = matmul(x, T(a, [1, 0]));
    return add(y, mul(matmul(u[m]!, T(B.get(`${l}.${m}`)!, [1, 0])), s));
  };
  /** Writes dA and dB when adapted; returns dx when `input` is wanted. */
  const projectBack = (l: number, m: LoraModule, x: string, u: string | undefined, dy: string, input: boolean): string | undefined => {
    let du: string | undefined;
    if (u) {
      const b = B.get(`${l}.${m}`)!;
      const { inDim, outDim } = weights.layers[l][m];
      g.output(g.node('Mul', [g.node('Gemm', [dy, u], { transA: 1 }), s], {}, loraGradOutput(l, m, 'B')), [outDim, lora!.r]);
      du = mul(matmul(dy, b), s);
      g.output(g.node('Gemm', [du, x], { transA: 1 }, loraGradOutput(l, m, 'A')), [lora!.r, inDim]);
    }
    if (full) {
      const { inDim, outDim, bias } = weights.layers[l][m];
      g.output(g.node('Gemm', [x, dy], { transA: 1 }, weightGradOutput(`w.${l}.${m}`)), [inDim, outDim]);
      if (bias) g.output(g.node('ReduceSum', [dy, g.int64s([0])], { keepdims: 0 }, weightGradOutput(`b.${l}.${m}`)), [outDim]);
    }
    if (!input) return undefined;
    const dx = frozen.get(`${l}.${m}`)!.timesTransposed(dy);
    return du ? add(dx, matmul(du, A.get(`${l}.${m}`)!)) : dx;
  };
  // Forward.
  const shapes = headShapes();
  const toHeads = (x2: string, shape: string) => T(reshape(x2, shape), [0, 2, 1, 3]);
  const fromHeads = (x4: string, width: number) => reshape(T(x4, [0, 2, 1, 3]), flat(width));
  const groupedBias = groups === 1 ? bias : g.node('Tile', [bias, g.int64s([1, 1, groups, 1])]);
  const embedding = param('embedding', weights.embedding, [V, H]);
  const flatIds = reshape(ids, g.int64s([-1]));
  let x = g.node('Gather', [embedding, flatIds], { axis: 0 });
  const saved: LayerTensors[] = [];
  weights.layers.forEach((w, l) => {
    const u: Partial<Record<LoraModule, string>> = {};
    const inputNorm = normScale(`norm.${l}.input`, w.inputNorm);
    const { y: h, inv: inv1 } = rms(x, inputNorm);
    const q4 = toHeads(project(l, 'q_proj', w.q_proj, h, u), shapes.q);
    const k4 = toHeads(project(l, 'k_proj', w.k_proj, h, u), shapes.kv);
    const v4 = toHeads(project(l, 'v_proj', w.v_proj, h, u), shapes.kv);
    const qNormed = w.qNorm ? rms(q4, normScale(`norm.${l}.q`, w.qNorm)) : undefined;
    const kNormed = w.kNorm ? rms(k4, normScale(`norm.${l}.k`, w.kNorm)) : undefined;
    const qr = rope(qNormed?.y ?? q4);
    const kr = rope(kNormed?.y ?? k4);
    const qg = groups === 1 ? qr : reshape(qr, g.int64s([0, Hkv, -1, D]));
    const scores = add(mul(matmul(qg, T(kr, [0, 1, 3, 2])), attentionScale), groupedBias);
    const probs = g.node('Softmax', [scores], { axis: -1 });
    const ctxg = matmul(probs, v4);
    const ctx2 = fromHeads(groups === 1 ? ctxg : reshape(ctxg, g.int64s([0, Hq, -1, D])), Hq * D);
    const x1 = add(x, project(l, 'o_proj', w.o_proj, ctx2, u));
    const { y: h2, inv: inv2 } = rms(x1, normScale(`norm.${l}.post`, w.postNorm));
    const gate = project(l, 'gate_proj', w.gate_proj, h2, u);
    const up = project(l, 'up_proj', w.up_proj, h2, u);
    const act = mul(mul(gate, g.node('Sigmoid', [gate])), up);
    saved.push({ x, h, inv1, q4, k4, ...(qNormed ? { qInv: qNormed.inv } : {}), ...(kNormed ? { kInv: kNormed.inv } : {}), qg, kr, v4, probs, ctx2, x1, h2, inv2, gate, up, act, u });
    x = add(x1, project(l, 'down_proj', w.down_proj, act, u));
  });
  const picked = g.node('Gather', [x, rows], { axis: 0 });
  const finalNorm = normScale('norm.final', weights.finalNorm);
  const { y: hf, inv: invF } = rms(picked, finalNorm);
  const head = weights.lmHead ? param('lm_head', weights.lmHead, [H, V]) : embedding;
  const logits = weights.lmHead ? matmul(hf, head) : g.node('Gemm', [hf, head], { transB: 1 });
  const logSoftmax = g.node('LogSoftmax', [mul(logits, invT)], { axis: -1 });
  const column = (v: string) => g.node('Unsqueeze', [v, g.int64s([1])]);
  const logps = g.node('Reshape', [g.node('GatherElements', [logSoftmax, column(tokens)], { axis: 1 }), g.int64s([-1])], {}, io.logps);
  const entropies = g.node('Neg', [g.node('ReduceSum', [mul(g.node('Exp', [logSoftmax]), logSoftmax), g.int64s([-1])], { keepdims: 0 })], {}, io.entropies);
  g.output(logps, ['scored']);
  g.output(entropies, ['scored']);

  // Backward.
  g.phase = 'backward';
  const dlogps = column(g.input(io.dlogps, 'float', ['scored']));
  const dentropies = column(g.input(io.dentropies, 'float', ['scored']));
  const probs = g.node('Exp', [logSoftmax]);
  const onehot = g.toFloat(g.node('Equal', [column(tokens), g.int64s(Array.from({ length: V }, (_, i) => i))]));
  const dz = mul(sub(mul(onehot, dlogps), mul(probs, add(dlogps, mul(dentropies, add(logSoftmax, column(entropies)))))), invT);
  const dhf = weights.lmHead ? g.node('Gemm', [dz, head], { transB: 1 }) : matmul(dz, head);
  // The head's own gradient: [H, V] untied; tied, the embedding's share from the head ([V, H]), completed below.
  const dHead = full ? (weights.lmHead ? g.node('Gemm', [hf, dz], { transA: 1 }, weightGradOutput('lm_head')) : g.node('Gemm', [dz, hf], { transA: 1 })) : undefined;
  if (full && weights.lmHead) g.output(dHead!, [H, V]);
  const dPicked = rmsBack(picked, invF, finalNorm, dhf, [0]);
  const batchShape = g.node('Shape', [ids]);
  const rowCount = mul(g.node('Slice', [batchShape, g.int64s([0]), g.int64s([1])]), g.node('Slice', [batchShape, g.int64s([1]), g.int64s([2])]));
  // A row can predict several scored tokens (a prompt's last row predicts every completion's first): their gradients add.
  let dx = g.node('ScatterND', [g.zeros(g.node('Concat', [rowCount, g.int64s([H])], { axis: 0 })), column(rows), dPicked], { reduction: 'add' });
  const back = headShapes();
  for (let l = weights.layers.length - 1; l >= 0; l--) {
    const w = weights.layers[l];
    const t = saved[l];
    const dAct = projectBack(l, 'down_proj', t.act, t.u.down_proj, dx, true)!;
    const sig = g.node('Sigmoid', [t.gate]);
    const dGate = mul(dAct, mul(t.up, mul(sig, add(one, mul(t.gate, sub(one, sig))))));
    const dUp = mul(dAct, mul(t.gate, sig));
    const dh2 = add(projectBack(l, 'gate_proj', t.h2, t.u.gate_proj, dGate, true)!, projectBack(l, 'up_proj', t.h2, t.u.up_proj, dUp, true)!);
    const dx1 = add(dx, rmsBack(t.x1, t.inv2, `norm.${l}.post`, dh2, [0]));
    const dCtx2 = projectBack(l, 'o_proj', t.ctx2, t.u.o_proj, dx1, true)!;
    const dCtx4 = toHeads(dCtx2, back.q);
    const dCtxg = groups === 1 ? dCtx4 : reshape(dCtx4, g.int64s([0, Hkv, -1, D]));
    const dProbs = matmul(dCtxg, T(t.v4, [0, 1, 3, 2]));
    const dv4 = matmul(T(t.probs, [0, 1, 3, 2]), dCtxg);
    const dScores = mul(mul(t.probs, sub(dProbs, g.node('ReduceSum', [mul(dProbs, t.probs), lastAxis], { keepdims: 1 }))), attentionScale);
    const dqg = matmul(dScores, t.kr);
    const dkr = matmul(T(dScores, [0, 1, 3, 2]), t.qg);
    let dq4 = ropeBack(groups === 1 ? dqg : reshape(dqg, g.int64s([0, Hq, -1, D])));
    let dk4 = ropeBack(dkr);
    if (w.qNorm) dq4 = rmsBack(t.q4, t.qInv!, `norm.${l}.q`, dq4, [0, 1, 2]);
    if (w.kNorm) dk4 = rmsBack(t.k4, t.kInv!, `norm.${l}.k`, dk4, [0, 1, 2]);
    // The first layer's input is the embedding, which LoRA does not train: no gradient past its q, k, v.
    const wantInput = l > 0 || full;
    const dhq = projectBack(l, 'q_proj', t.h, t.u.q_proj, fromHeads(dq4, Hq * D), wantInput);
    const dhk = projectBack(l, 'k_proj', t.h, t.u.k_proj, fromHeads(dk4, Hkv * D), wantInput);
    const dhv = projectBack(l, 'v_proj', t.h, t.u.v_proj, fromHeads(dv4, Hkv * D), wantInput);
    if (wantInput) dx = add(dx1, rmsBack(t.x, t.inv1, `norm.${l}.input`, add(add(dhq!, dhk!), dhv!), [0]));
  }
  if (full) {
    // Every row's input gradient lands on its token's embedding row; rows of one token add.
    const dEmbedding = g.node('ScatterND', [g.zeros(g.int64s([V, H])), column(flatIds), dx], { reduction: 'add' });
    g.output(weights.lmHead ? g.node('Identity', [dEmbedding], {}, weightGradOutput('embedding')) : g.node('Add', [dEmbedding, dHead!], {}, weightGradOutput('embedding')), [V, H]);
  }
  return g.encode(full ? 'decoder' : 'lora');
}

/**
 * Whether 4-bit blocks can stay packed in the graphs: float32 (MatMulNBits has no double kernel),
 * whole blocks (the uint4 view of a row is then exactly K values), and zero points that pack a
 * row's blocks without padding.
 */
function packable(w: Q4Matrix, precision: Precision): boolean {
  const blocks = w.K / w.blockSize;
  return precision === 'float32' && Number.isInteger(blocks) && (!w.zeroPoints || blocks % 2 === 0);
}
