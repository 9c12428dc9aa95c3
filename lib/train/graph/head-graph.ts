/**
 * The LM-head adapter's training step (lib/train/head-engine.ts) as two ONNX graphs: the LoRA
 * graphs' head, with LoRA on the head only. The frozen model's states of the scored tokens (base
 * logits z and hidden state h, collected once per batch by the policy) are inputs, and so are A
 * and B, so an update needs no new graph:
 *
 *   u = s h A,  z' = z + u B,  logp = log softmax(z' / T)[target],  H = -sum p log p,
 *   ref = log softmax(z / T)[target]
 *   dz = (onehot dlogp - p (dlogp + dH (log p + H))) / T,  dB = u^T dz,  dA = s h^T (dz B^T)
 *
 * A vocabulary entry the base logits mask out (-Infinity, p = 0) adds nothing: p log p and its
 * gradient are taken as 0 there, not 0 x -Infinity.
 */
import type { AdapterShape } from '../head/adapter.js';
import { TrainingGraphBuilder, type TrainingModels } from './builder.js';
import { HEAD_IO } from './head-io.js';

export function buildHeadGraphs(shape: AdapterShape): TrainingModels {
  const g = new TrainingGraphBuilder('float32');
  const { hiddenSize: d, vocabSize: V, rank: r, scale } = shape;
  const io = HEAD_IO;
  const z = g.input(io.logits, 'float', ['tokens', V]);
  const h = g.input(io.hidden, 'float', ['tokens', d]);
  const targets = g.input(io.targets, 'int64', ['tokens']);
  const a = g.input(io.a, 'float', [d, r]);
  const b = g.input(io.b, 'float', [r, V]);
  const invT = g.input(io.invTemperature, 'float', []);
  const s = g.scalar(scale);
  const zero = g.scalar(0);
  const mul = (x: string, y: string) => g.node('Mul', [x, y]);
  const add = (x: string, y: string) => g.node('Add', [x, y]);
  const column = (v: string) => g.node('Unsqueeze', [v, g.int64s([1])]);
  /** p x where p > 0, and 0 where p = 0 (a masked entry's x is -Infinity or undefined). */
  const weighted = (p: string, x: string) => g.node('Where', [g.node('Equal', [p, zero]), zero, mul(p, x)]);
  const pick = (logSoftmax: string, name: string) => g.node('Reshape', [g.node('GatherElements', [logSoftmax, column(targets)], { axis: 1 }), g.int64s([-1])], {}, name);

  const u = mul(g.node('MatMul', [h, a]), s);
  const logSoftmax = g.node('LogSoftmax', [mul(add(z, g.node('MatMul', [u, b])), invT)], { axis: -1 });
  const probs = g.node('Exp', [logSoftmax]);
  const entropies = g.node('Neg', [g.node('ReduceSum', [weighted(probs, logSoftmax), g.int64s([-1])], { keepdims: 0 })], {}, io.entropies);
  g.output(pick(logSoftmax, io.logps), ['tokens']);
  g.output(entropies, ['tokens']);
  g.output(pick(g.node('LogSoftmax', [mul(z, invT)], { axis: -1 }), io.refLogps), ['tokens']);

  g.phase = 'backward';
  const dlogps = column(g.input(io.dlogps, 'float', ['tokens']));
  const dentropies = column(g.input(io.dentropies, 'float', ['tokens']));
  const onehot = g.toFloat(g.node('Equal', [column(targets), g.int64s(Array.from({ length: V }, (_, i) => i))]));
  const spread = weighted(g.node('Exp', [logSoftmax]), add(dlogps, mul(dentropies, add(logSoftmax, column(entropies)))));
  const dz = mul(g.node('Sub', [mul(onehot, dlogps), spread]), invT);
  g.output(g.node('Gemm', [u, dz], { transA: 1 }, io.gradB), [r, V]);
  const du = g.node('Gemm', [dz, b], { transB: 1 });
  g.output(g.node('Mul', [g.node('Gemm', [h, du], { transA: 1 }), s], {}, io.gradA), [d, r]);
  return g.encode('head');
}
