/**
 * From a grouped rollout batch and the engine's per-token statistics to the GRPO loss and the two
 * per-token sensitivities the backward pass needs. The loss is the math core's `grpoLoss` (TRL's
 * semantics, exact gradient in the log-probs); the entropy bonus, which `grpoLoss` treats as an
 * input, is differentiated here: loss -= entropyCoef * mask-mean(H), so d loss / d H_t is
 * -entropyCoef / (active tokens) for every active token.
 */
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import type { GroupRolloutBatch } from '../math/batch.js';
import { rolloutLossBatch } from '../math/batch.js';
import { grpoLoss, resolveLossConfig, type GrpoLossConfig, type GrpoLossMetrics } from '../math/loss.js';
import type { TokenStats } from './engine.js';

/** Where each completion token's state sits in the engine: row i's token t is slot offsets[i] + t. */
export interface TokenLayout {
  /** Per row, the tokens that need a state: up to the last one the mask counts. */
  completions: number[][];
  offsets: Int32Array;
  /** The token each slot's distribution is scored on. */
  targets: Int32Array;
  count: number;
}

export function tokenLayout(batch: GroupRolloutBatch): TokenLayout {
  const outputs = batch.rollout.sequences;
  const mask = batch.rollout.responseMask;
  const completions = outputs.map((row, i) => {
    let end = row.length;
    while (end > 0 && !mask[i][end - 1]) end--;
    return Array.from(row).slice(0, end).map(Number);
  });
  const offsets = new Int32Array(completions.length);
  let count = 0;
  completions.forEach((c, i) => {
    offsets[i] = count;
    count += c.length;
  });
  const targets = new Int32Array(count);
  completions.forEach((c, i) => targets.set(c, offsets[i]));
  return { completions, offsets, targets, count };
}

export interface ObjectiveResult {
  loss: number;
  metrics: GrpoLossMetrics;
  advantages: AdvantageResult;
  /** d loss / d log p'(y) per slot. */
  dLogp: Float64Array;
  /** d loss / d H' per slot. */
  dEntropy: Float64Array;
  /** Active (mask 1) tokens in the batch. */
  activeTokens: number;
}

export function grpoObjective(
  batch: GroupRolloutBatch,
  layout: TokenLayout,
  stats: TokenStats,
  lossConfig: GrpoLossConfig,
  /** How to compute the advantages from the batch's rewards, or the advantages themselves. */
  advantages: Omit<AdvantageOptions, 'groupSize'> | AdvantageResult = {},
): ObjectiveResult {
  const resolved = resolveLossConfig(lossConfig);
  const width = batch.rollout.sequences[0]?.length ?? 0;
  // Rows of T; positions past a row's states are masked, and grpoLoss never reads them.
  const rows = (values: Float64Array) =>
    layout.completions.map((c, i) => {
      const row = new Float64Array(width);
      row.set(values.subarray(layout.offsets[i], layout.offsets[i] + c.length));
      return row;
    });
  const scores = {
    logps: rows(stats.logps),
    ...(resolved.beta !== 0 ? { refLogps: rows(stats.refLogps) } : {}),
    entropies: rows(stats.entropies),
  };
  const { batch: lossBatch, advantages: used } = rolloutLossBatch(batch, scores, advantages);
  const { loss, grad, metrics } = grpoLoss(lossBatch, lossConfig);

  const mask = batch.rollout.responseMask;
  let active = 0;
  for (const row of mask) for (let t = 0; t < row.length; t++) active += row[t] ? 1 : 0;
  const entropySlope = -resolved.entropyCoef / Math.max(active, 1);
  const dLogp = new Float64Array(layout.count);
  const dEntropy = new Float64Array(layout.count);
  layout.completions.forEach((c, i) => {
    for (let t = 0; t < c.length; t++) {
      if (!mask[i][t]) continue;
      dLogp[layout.offsets[i] + t] = grad[i][t];
      dEntropy[layout.offsets[i] + t] = entropySlope;
    }
  });
  return { loss, metrics, advantages: used, dLogp, dEntropy, activeTokens: active };
}
