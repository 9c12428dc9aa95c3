/**
 * The loss's sensitivities part by part (partSensitivities, what GrpoTrainer hands a training
 * engine's forwardBackward) against one objective over the finished batch, for every loss type and
 * option: each part's slots get the same d loss / d log p and d loss / d H although the slots after
 * it hold 0 when it is asked. topEntropyQuantile < 1 cuts at a quantile of the whole batch's
 * entropies, so part by part it differs: perCompletionGradient says so and the trainer does not
 * take that path.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../lib/math/random.js';
import { perCompletionGradient, type GrpoLossConfig } from '../../lib/math/loss-config.js';
import { grpoObjective, partSensitivities, type RolloutSampling } from '../../lib/train/objective.js';
import type { EngineStats } from '../../lib/train/engine.js';
import { gradCase } from '../grad/fixtures.js';

const LOSSES: Array<[string, GrpoLossConfig]> = [
  ['grpo with KL and an entropy bonus', { lossType: 'grpo', beta: 0.04, entropyCoef: 0.01 }],
  ['bnpo, sequence-level ratios', { lossType: 'bnpo', importanceSamplingLevel: 'sequence', beta: 0.02 }],
  ['dr_grpo, asymmetric clipping', { lossType: 'dr_grpo', maxCompletionLength: 4, epsilon: 0.1, epsilonHigh: 0.28 }],
  ['dapo, two-sided clipping, bias-corrected KL', { lossType: 'dapo', delta: 1.5, beta: 0.05, biasCorrectedKl: true, entropyCoef: -0.02 }],
  ['cispo', { lossType: 'cispo', epsilonHigh: 5 }],
  ['sapo', { lossType: 'sapo', sapoTemperaturePos: 0.9, sapoTemperatureNeg: 1.2 }],
  ['luspo', { lossType: 'luspo', importanceSamplingLevel: 'sequence' }],
  ['vespo', { lossType: 'vespo', vespoKPos: 1.5, vespoLambdaNeg: 2.5 }],
  ['dapo, token importance sampling and off-policy masking', { importanceSampling: { mode: 'token_truncate', clipMax: 2 }, offPolicyMaskThreshold: 0.1 }],
  ['grpo, sequence-masked importance sampling', { lossType: 'grpo', importanceSampling: { mode: 'sequence_mask', clipMin: 0.5, clipMax: 2 } }],
];

function setting(seed: number) {
  const c = gradCase(seed);
  const rng = mulberry32(seed + 50);
  const values = (shift: number, spread: number) => Float64Array.from({ length: c.layout.count }, () => shift + spread * (2 * rng() - 1));
  const stats: Required<EngineStats> = { logps: values(-2.4, 0.6), entropies: values(1.5, 0.8), refLogps: values(-2.4, 0.6) };
  const width = c.batch.rollout.sequences[0].length;
  const sampling: RolloutSampling = {
    samplingLogprobs: c.layout.completions.map(() => Float64Array.from({ length: width }, () => -2.4 + 0.6 * (2 * rng() - 1))),
    truncated: c.layout.completions.map((_, i) => i === 4),
  };
  return { c, stats, sampling };
}

/** Each part's sensitivities asked in order, parts of `rows` completions, as an engine asks them. */
function byParts(c: ReturnType<typeof gradCase>, stats: Required<EngineStats>, loss: GrpoLossConfig, sampling: RolloutSampling, rows: number) {
  const objectiveOf = (s: EngineStats) => grpoObjective(c.batch, c.layout, { ...s, refLogps: s.refLogps ?? new Float64Array(c.layout.count) }, loss, {}, sampling);
  const ask = partSensitivities(c.layout.count, objectiveOf);
  const dLogp = new Float64Array(c.layout.count);
  const dEntropy = new Float64Array(c.layout.count);
  for (let first = 0; first < c.layout.completions.length; first += rows) {
    const start = c.layout.offsets[first];
    const last = Math.min(c.layout.completions.length, first + rows) - 1;
    const end = c.layout.offsets[last] + c.layout.completions[last].length;
    const part = ask({ logps: stats.logps.slice(start, end), entropies: stats.entropies.slice(start, end), refLogps: stats.refLogps.slice(start, end) }, start, end);
    dLogp.set(part.dLogp, start);
    dEntropy.set(part.dEntropy, start);
  }
  return { dLogp, dEntropy, whole: objectiveOf(stats) };
}

const largestGap = (a: Float64Array, b: Float64Array) => Math.max(...Array.from(a, (v, i) => Math.abs(v - b[i])));

describe('partSensitivities', () => {
  it.each(LOSSES)('%s: parts of one and of two completions get the whole batch\'s sensitivities', (_, loss) => {
    expect(perCompletionGradient(loss)).toBe(true);
    const { c, stats, sampling } = setting(7);
    for (const rows of [1, 2]) {
      const { dLogp, dEntropy, whole } = byParts(c, stats, loss, sampling, rows);
      const scale = Math.max(...Array.from(whole.dLogp, Math.abs));
      // Not vacuous: the loss moves with the log-probs.
      expect(scale).toBeGreaterThan(1e-3);
      expect(largestGap(dLogp, whole.dLogp)).toBeLessThanOrEqual(1e-12 * scale);
      expect(largestGap(dEntropy, whole.dEntropy)).toBeLessThanOrEqual(1e-12);
    }
  });

  it('differs for topEntropyQuantile < 1, which perCompletionGradient refuses', () => {
    const loss: GrpoLossConfig = { topEntropyQuantile: 0.5 };
    expect(perCompletionGradient(loss)).toBe(false);
    const { c, stats, sampling } = setting(7);
    const { dLogp, whole } = byParts(c, stats, loss, sampling, 2);
    expect(largestGap(dLogp, whole.dLogp)).toBeGreaterThan(1e-6);
  });
});
