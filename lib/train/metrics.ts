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
  /**
   * |logp_sample - logp_train| over the batch's completion tokens, mean and max: the rollouts'
   * log-probs against this update's forward, before the update. On a step's first iteration both
   * are of the same parameters, so it is how far the sampler and the trainer disagree (near zero on
   * policy); later iterations add the updates since. Absent in steps stored before it was measured.
   */
  logprobDrift?: { mean: number; max: number };
}
