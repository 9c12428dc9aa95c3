/** The GRPO math core: pure float64 functions, no dependencies, numbers matching TRL. */
export {
  computeAdvantages,
  type AdvantageEstimator,
  type AdvantageOptions,
  type AdvantageResult,
  type RewardAggregation,
  type RewardTable,
  type RewardValue,
  type ScaleRewards,
} from './advantages.js';
export { tokenLogProbs, type TokenLogProbs, type TokenLogProbsInput } from './logprobs.js';
export { grpoLoss, type GrpoLossResult } from './loss.js';
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
} from './loss-config.js';
export type { GrpoLossBatch } from './loss-inputs.js';
export type { GrpoLossMetrics, RatioSummary } from './loss-metrics.js';
export {
  DEFAULT_IMPORTANCE_SAMPLING,
  samplingCorrection,
  samplingMismatch,
  type SamplingSettings,
} from './sampling-correction.js';
export {
  appliedEntropyCoef,
  nextAdaptiveEntropy,
  resolveAdaptiveEntropy,
  type AdaptiveEntropyOptions,
  type AdaptiveEntropyState,
  type ResolvedAdaptiveEntropy,
} from './adaptive-entropy.js';
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
} from './batch.js';
export { logSumExp, mean, nanMean, nanStd, softmax, std } from './stats.js';
export { mulberry32, randomInt, type Rng } from './random.js';
export { passAtK } from './pass-at-k.js';
export type { Rows } from './validate.js';
