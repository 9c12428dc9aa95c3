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
