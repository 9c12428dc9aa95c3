import type { AdaptiveEntropyState } from '../math/adaptive-entropy.js';
import type { AdvantageResult } from '../math/advantages.js';
import type { GrpoLossMetrics } from '../math/loss.js';
import { nanMean, nanStd } from '../math/stats.js';

/** What one optimizer update of gradient GRPO reports (plain data: it is stored with each step). */

export interface TrainStepMetrics {
  /** The loss before this update. */
  loss: number;
  /** Mean k3 KL to the reference over active tokens (present when beta is not 0). */
  kl?: number;
  /** Mean entropy of the adapted policy over active tokens. */
  entropy: number;
  clipRatioLow: number;
  clipRatioHigh: number;
  clipRatioRegion: number;
  /** Smallest per-completion share of low-clipped tokens (clipped loss types). */
  clipRatioLowMin?: number;
  /** Largest per-completion share of high-clipped tokens (clipped loss types). */
  clipRatioHighMax?: number;
  /** cispo: share of ratios above its cap with a positive advantage. */
  cispoClipRatio?: number;
  /** vespo: mean gamma weight over the completions. */
  vespoPhiMean?: number;
  /** The loss before the entropy bonus (when the bonus is on). */
  policyLoss?: number;
  /** The sampling-mismatch ratios after their bounds (when the correction applied). */
  importanceSamplingRatio?: { min: number; mean: number; max: number };
  /** The entropy bonus coefficient after this update (moves with adaptiveEntropy). */
  entropyCoef?: number;
  /** With adaptiveEntropy: the controller's state after this update (a resumed run restores it). */
  adaptiveEntropy?: { coef: number; lastEntropy?: number };
  /** Over the batch's scorable completions. */
  rewardMean: number;
  rewardStd: number;
  /** Share of completions in groups whose rewards did not differ (TRL's frac_reward_zero_std). */
  fracRewardZeroStd: number;
  advantageMean: number;
  advantageStd: number;
  advantageMin: number;
  advantageMax: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** The factor clipping multiplied the gradient by (1: not clipped). */
  clipCoef: number;
  /** Completion tokens counted by the loss. */
  tokens: number;
  /** Optimizer updates so far, this one included. */
  step: number;
  learningRate: number;
}

/** The metrics a loss type or option adds, copied when present. */
function optionalMetrics(m: GrpoLossMetrics): Partial<TrainStepMetrics> {
  const out: Partial<TrainStepMetrics> = {};
  for (const key of ['clipRatioLowMin', 'clipRatioHighMax', 'cispoClipRatio', 'vespoPhiMean', 'policyLoss'] as const) {
    if (m[key] !== undefined) out[key] = m[key];
  }
  if (m.importanceSamplingRatio) out.importanceSamplingRatio = { ...m.importanceSamplingRatio };
  return out;
}

/**
 * The objective's numbers an update reports (`grpoObjective`'s result has them). Stated here, not
 * imported from objective.ts: these metrics are public types of the main entry, which must not
 * reach the engines' declarations (and through them the model runtime's).
 */
export interface ObjectiveNumbers {
  loss: number;
  metrics: GrpoLossMetrics;
  advantages: AdvantageResult;
  activeTokens: number;
}

/** What an update adds to its objective's numbers: the optimizer's side and the entropy controller's. */
export interface UpdateFacts {
  gradNorm: number;
  clipCoef: number;
  /** Optimizer updates so far, this one included. */
  step: number;
  learningRate: number;
  /** The entropy coefficient the loss was computed with. */
  entropyCoef: number;
  /** With adaptiveEntropy: the controller's state after this update. */
  adaptiveEntropy?: AdaptiveEntropyState;
}

/** One update's metrics, from its objective and its optimizer step (both trainers report these). */
export function stepMetrics(objective: ObjectiveNumbers, update: UpdateFacts): TrainStepMetrics {
  const { advantages, rewards, fracRewardZeroStd } = objective.advantages;
  const m = objective.metrics;
  return {
    loss: objective.loss,
    ...(m.kl !== undefined ? { kl: m.kl } : {}),
    entropy: m.entropy ?? 0,
    clipRatioLow: m.clipRatioLow ?? 0,
    clipRatioHigh: m.clipRatioHigh ?? 0,
    clipRatioRegion: m.clipRatioRegion ?? 0,
    ...optionalMetrics(m),
    entropyCoef: update.adaptiveEntropy ? update.adaptiveEntropy.coef : update.entropyCoef,
    ...(update.adaptiveEntropy ? { adaptiveEntropy: { ...update.adaptiveEntropy } } : {}),
    rewardMean: nanMean(rewards),
    rewardStd: nanStd(rewards),
    fracRewardZeroStd,
    advantageMean: nanMean(advantages),
    advantageStd: nanStd(advantages),
    advantageMin: Math.min(...advantages),
    advantageMax: Math.max(...advantages),
    gradNorm: update.gradNorm,
    clipCoef: update.clipCoef,
    tokens: objective.activeTokens,
    step: update.step,
    learningRate: update.learningRate,
  };
}
