/**
 * `webgrpo/math`: the GRPO maths as pure float64 functions with no dependencies, numbers matching
 * TRL's GRPOTrainer: group-relative advantages, per-token log-probs and entropy, the GRPO loss
 * family with its analytic gradient (TRL's loss types, importance sampling, the sampling
 * correction, adaptive entropy), the typed batch layers, statistics and seeded randomness.
 *
 * @module webgrpo/math
 */
export {
  computeAdvantages,
  type AdvantageEstimator,
  type AdvantageOptions,
  type AdvantageResult,
  type RewardAggregation,
  type RewardTable,
  type RewardValue,
  type ScaleRewards,
} from './math/advantages.js';
export { tokenLogProbs, type TokenLogProbs, type TokenLogProbsInput } from './math/logprobs.js';
export { grpoLoss, type GrpoLossResult } from './math/loss.js';
export {
  IMPORTANCE_SAMPLING_MODES,
  LOSS_TYPES,
  resolveLossConfig,
  type GrpoLossConfig,
  type ImportanceSamplingLevel,
  type ImportanceSamplingMode,
  type ImportanceSamplingOptions,
  type LossType,
  type ResolvedLossConfig,
} from './math/loss-config.js';
export type { GrpoLossBatch } from './math/loss-inputs.js';
export type { GrpoLossMetrics, RatioSummary } from './math/loss-metrics.js';
export {
  DEFAULT_IMPORTANCE_SAMPLING,
  samplingCorrection,
  samplingMismatch,
  type SamplingSettings,
} from './math/sampling-correction.js';
export {
  appliedEntropyCoef,
  nextAdaptiveEntropy,
  resolveAdaptiveEntropy,
  type AdaptiveEntropyOptions,
  type AdaptiveEntropyState,
  type ResolvedAdaptiveEntropy,
} from './math/adaptive-entropy.js';
export {
  GeneratedBatch,
  GeneratedSequenceBatch,
  GroupRolloutBatch,
  GrpoConfig,
  SequenceRolloutBatch,
  rolloutLossBatch,
  type GrpoConfigInit,
  type GrpoLossExtras,
  type PolicyScores,
} from './math/batch.js';
export { logSumExp, mean, nanMean, nanStd, softmax, std } from './math/stats.js';
export { mulberry32, randomInt, type Rng } from './math/random.js';
export { passAtK } from './math/pass-at-k.js';
export type { Rows } from './math/validate.js';
