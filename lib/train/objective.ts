/**
 * From a grouped rollout batch and the engine's per-token statistics to the GRPO loss and the two
 * per-token sensitivities the backward pass needs. The loss is the math core's `grpoLoss` (TRL's
 * semantics, exact gradients in the log-probs and, for the entropy bonus, in the entropies).
 * Completions marked truncated leave the loss (mask 0) but, as in TRL, still count in the
 * advantages and in the token count the dapo-style types divide by.
 */
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import type { GroupRolloutBatch } from '../math/batch.js';
import { rolloutLossBatch } from '../math/batch.js';
import { grpoLoss } from '../math/loss.js';
import { resolveLossConfig, type GrpoLossConfig } from '../math/loss-config.js';
import type { GrpoLossMetrics } from '../math/loss-metrics.js';
import type { Rows } from '../math/validate.js';
import { InvalidInputError } from '../errors.js';
import type { EngineStats, PartSensitivities } from './engine.js';

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
  /** Tokens the loss counts (mask 1, truncated completions left out). */
  activeTokens: number;
}

/** What the rollouts carry besides the batch: the log-probs tokens were drawn with, and which ran out of length. */
export interface RolloutSampling {
  /** B rows of T: log-probs under the (filtered) distribution each token was sampled from. */
  samplingLogprobs?: Rows;
  /** Per row: true when the completion stopped at the length limit; those rows get mask 0. */
  truncated?: ArrayLike<boolean>;
}

export function grpoObjective(
  batch: GroupRolloutBatch,
  layout: TokenLayout,
  stats: Required<EngineStats>,
  lossConfig: GrpoLossConfig,
  /** How to compute the advantages from the batch's rewards, or the advantages themselves. */
  advantages: Omit<AdvantageOptions, 'groupSize'> | AdvantageResult = {},
  sampling: RolloutSampling = {},
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
  if (sampling.samplingLogprobs) lossBatch.samplingLogps = sampling.samplingLogprobs;
  const count = (rows: Rows) => rows.reduce((n, row) => n + Array.from(row).filter(Boolean).length, 0);
  if (sampling.truncated) {
    const truncated = sampling.truncated;
    if (truncated.length !== batch.batchSize) {
      throw new InvalidInputError('truncated', `must hold one flag per completion (${batch.batchSize}), got ${truncated.length}.`);
    }
    lossBatch.mask = batch.rollout.responseMask.map((row, i) => (truncated[i] ? new Array<number>(row.length).fill(0) : row));
  }
  const { loss, grad, entropyGrad, metrics } = grpoLoss(lossBatch, lossConfig);

  const dLogp = new Float64Array(layout.count);
  const dEntropy = new Float64Array(layout.count);
  layout.completions.forEach((c, i) => {
    for (let t = 0; t < c.length; t++) {
      dLogp[layout.offsets[i] + t] = grad[i][t];
      if (entropyGrad) dEntropy[layout.offsets[i] + t] = entropyGrad[i][t];
    }
  });
  return { loss, metrics, advantages: used, dLogp, dEntropy, activeTokens: count(lossBatch.mask as Rows) };
}

/**
 * The loss's sensitivities part by part, for an engine's forwardBackward: each part's numbers go
 * into the whole batch's slots, the objective is taken over the whole batch (slots no part has
 * reached yet hold 0, which the loss's gradient at a finished completion never reads when it is
 * per completion, `perCompletionGradient`), and the part's own slots are handed back, so every
 * slot gets exactly what one objective over the finished batch would give it.
 */
export function partSensitivities(count: number, objectiveOf: (stats: EngineStats) => ObjectiveResult): PartSensitivities {
  const logps = new Float64Array(count);
  const entropies = new Float64Array(count);
  const refLogps = new Float64Array(count);
  return (part, start, end) => {
    logps.set(part.logps, start);
    entropies.set(part.entropies, start);
    if (part.refLogps) refLogps.set(part.refLogps, start);
    const { dLogp, dEntropy } = objectiveOf({ logps, entropies, ...(part.refLogps ? { refLogps } : {}) });
    return { dLogp: dLogp.slice(start, end), dEntropy: dEntropy.slice(start, end) };
  };
}
