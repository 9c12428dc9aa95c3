/**
 * A tiny, fully specified gradient case (random states, adapter, rollouts) and an independent
 * float64 reference of the adapted loss, for finite-difference checks of every engine.
 */
import { computeAdvantages } from '../../lib/math/advantages.js';
import { GeneratedBatch, GeneratedSequenceBatch, GroupRolloutBatch, SequenceRolloutBatch } from '../../lib/math/batch.js';
import { grpoLoss } from '../../lib/math/loss.js';
import type { GrpoLossConfig } from '../../lib/math/loss-config.js';
import { mulberry32 } from '../../lib/math/random.js';
import type { HeadAdapterWeights } from '../../lib/policy/head-adapter.js';
import { tokenLayout, type TokenLayout } from '../../lib/train/objective.js';

export interface GradCase {
  weights: HeadAdapterWeights;
  z: Float32Array;
  h: Float32Array;
  batch: GroupRolloutBatch;
  layout: TokenLayout;
  temperature: number;
  loss: GrpoLossConfig;
}

/** d = 6, V = 11, r = 3; 2 groups of 3 rows of up to 4 tokens, one row shorter (masked tail). */
export function gradCase(seed = 1, options: { temperature?: number; loss?: GrpoLossConfig } = {}): GradCase {
  const random = mulberry32(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const d = 6;
  const v = 11;
  const r = 3;
  const rowsN = 6;
  const width = 4;
  const weights: HeadAdapterWeights = {
    hiddenSize: d,
    vocabSize: v,
    rank: r,
    scale: 0.7,
    a: Float32Array.from({ length: d * r }, () => normal() * 0.5),
    b: Float32Array.from({ length: r * v }, () => normal() * 0.5),
  };
  const outputs = Array.from({ length: rowsN }, () => Array.from({ length: width }, () => Math.floor(random() * v)));
  const mask = outputs.map((_, i) => Array.from({ length: width }, (_, t) => (i === 2 && t >= 2 ? 0 : 1)));
  const rewards = outputs.map(() => random());
  // Old log-probs near the real ones, spread so some ratios leave the clip range.
  const oldLogProbs = outputs.map((row) => row.map(() => Math.log(1 / v) + normal() * 0.4));
  const batch = new GroupRolloutBatch({
    rollout: new SequenceRolloutBatch({
      sequenceBatch: new GeneratedSequenceBatch({ generation: new GeneratedBatch({ outputs, rewards }), responseMask: mask }),
      oldLogProbs,
    }),
    groupSize: 3,
  });
  const layout = tokenLayout(batch);
  const z = Float32Array.from({ length: layout.count * v }, () => normal() * 1.5);
  const h = Float32Array.from({ length: layout.count * d }, () => normal());
  return {
    weights,
    z,
    h,
    batch,
    layout,
    temperature: options.temperature ?? 0.7,
    loss: options.loss ?? { beta: 0.04, entropyCoef: 0.01, epsilon: 0.2, lossType: 'dapo' },
  };
}

/** The loss of the case for adapter weights (a, b), computed in float64 from scratch. */
export function referenceLoss(c: GradCase, a: Float64Array, b: Float64Array): number {
  const { hiddenSize: d, vocabSize: v, rank: r, scale } = c.weights;
  const invT = 1 / c.temperature;
  const width = c.batch.rollout.sequences[0].length;
  const logps = c.layout.completions.map(() => new Array<number>(width).fill(0));
  const refLogps = c.layout.completions.map(() => new Array<number>(width).fill(0));
  const entropies = c.layout.completions.map(() => new Array<number>(width).fill(0));
  const stats = (row: number[], target: number) => {
    const x = row.map((value) => value * invT);
    const max = Math.max(...x);
    const logZ = Math.log(x.reduce((s, value) => s + Math.exp(value - max), 0)) + max;
    const logp = x.map((value) => value - logZ);
    return { logp: logp[target], entropy: -logp.reduce((s, l) => s + Math.exp(l) * l, 0) };
  };
  c.layout.completions.forEach((tokens, i) => {
    tokens.forEach((target, t) => {
      const slot = c.layout.offsets[i] + t;
      const z = Array.from(c.z.subarray(slot * v, (slot + 1) * v));
      const u = Array.from({ length: r }, (_, k) => {
        let sum = 0;
        for (let j = 0; j < d; j++) sum += c.h[slot * d + j] * a[j * r + k];
        return scale * sum;
      });
      const adapted = z.map((zj, j) => zj + u.reduce((s, uk, k) => s + uk * b[k * v + j], 0));
      const policy = stats(adapted, target);
      logps[i][t] = policy.logp;
      entropies[i][t] = policy.entropy;
      refLogps[i][t] = stats(z, target).logp;
    });
  });
  const { advantages } = computeAdvantages(c.batch.rollout.sequenceRewards!, { groupSize: c.batch.groupSize });
  return grpoLoss(
    { logps, oldLogps: c.batch.rollout.oldLogProbs, refLogps, advantages, mask: c.batch.rollout.responseMask, entropies },
    c.loss,
  ).loss;
}

/** Central finite differences of `referenceLoss` in every weight of A and B. */
export function finiteDifferences(c: GradCase, epsilon = 1e-6): { a: Float64Array; b: Float64Array } {
  const a = Float64Array.from(c.weights.a);
  const b = Float64Array.from(c.weights.b);
  const diff = (x: Float64Array) =>
    x.map((value, i) => {
      x[i] = value + epsilon;
      const up = referenceLoss(c, a, b);
      x[i] = value - epsilon;
      const down = referenceLoss(c, a, b);
      x[i] = value;
      return (up - down) / (2 * epsilon);
    });
  return { a: diff(a), b: diff(b) };
}

/** max |x - y| / max |y|: the error relative to the gradient's scale. */
export function relativeError(x: ArrayLike<number>, y: ArrayLike<number>): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < y.length; i++) {
    worst = Math.max(worst, Math.abs(x[i] - y[i]));
    scale = Math.max(scale, Math.abs(y[i]));
  }
  return worst / scale;
}
