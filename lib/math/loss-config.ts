/**
 * The options of `grpoLoss` and their validation: TRL's `GRPOConfig` fields that shape
 * `GRPOTrainer._compute_loss`, under camelCase names, with TRL's defaults.
 */
import { InvalidInputError } from '../errors.js';
import { describe, finiteNumber, integerAtLeast, oneOf } from './validate.js';

/** Every `lossType` `grpoLoss` takes, TRL's names. */
export const LOSS_TYPES = ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo'] as const;
export type LossType = (typeof LOSS_TYPES)[number];
export type ImportanceSamplingLevel = 'token' | 'sequence';

/** The modes of the sampling-mismatch correction (`importanceSampling.mode`), TRL's names. */
export const IMPORTANCE_SAMPLING_MODES = ['token_truncate', 'token_mask', 'sequence_truncate', 'sequence_mask'] as const;
/** TRL's `vllm_importance_sampling_mode`. */
export type ImportanceSamplingMode = (typeof IMPORTANCE_SAMPLING_MODES)[number];

/**
 * The correction for tokens drawn from another distribution than the one the trainer scores
 * (TRL's `vllm_importance_sampling_*`): ratio = exp(oldLogps - samplingLogps) per token, or of
 * the row's summed difference for the sequence modes; truncated into [clipMin, clipMax] or set to
 * 0 outside it (the mask modes), then multiplied into the policy term.
 */
export interface ImportanceSamplingOptions {
  mode: ImportanceSamplingMode;
  /** Upper bound; default 3 (`vllm_importance_sampling_clip_max`); null for none. */
  clipMax?: number | null;
  /** Lower bound; default none (`vllm_importance_sampling_clip_min`). */
  clipMin?: number | null;
}

export interface GrpoLossConfig {
  /** How per-token losses are formed and averaged; default 'dapo'. */
  lossType?: LossType;
  /** Lower clipping range: ratios below 1 - epsilon are clipped; default 0.2. */
  epsilon?: number;
  /**
   * Upper clipping range: ratios above 1 + epsilonHigh are clipped; default `epsilon`. For
   * 'cispo' it is the absolute cap on the ratio (ScaleRL recommends 5).
   */
  epsilonHigh?: number;
  /** Two-sided clipping: caps the unclipped ratio at delta (INTELLECT-2); off by default. */
  delta?: number;
  /** KL coefficient toward the reference policy; default 0. */
  beta?: number;
  /** 'token' ratios (default) or one ratio per sequence (GSPO; required by 'luspo'). */
  importanceSamplingLevel?: ImportanceSamplingLevel;
  /** Completion length budget; the dr_grpo denominator is B * maxCompletionLength. */
  maxCompletionLength?: number;
  /**
   * Entropy bonus: subtracts entropyCoef times the trained tokens' entropy, summed over
   * numItemsInBatch for cispo, dapo and vespo, their mean for the other types (TRL); default 0.
   */
  entropyCoef?: number;
  /** SAPO gate temperature for rows with a positive advantage; default 1. */
  sapoTemperaturePos?: number;
  /** SAPO gate temperature for the other rows; default 1.05. */
  sapoTemperatureNeg?: number;
  /** VESPO gamma shape k for advantages >= 0; default 2. */
  vespoKPos?: number;
  /** VESPO gamma rate lambda for advantages >= 0; default 3. */
  vespoLambdaPos?: number;
  /** VESPO gamma shape k for negative advantages; default 3. */
  vespoKNeg?: number;
  /** VESPO gamma rate lambda for negative advantages; default 2. */
  vespoLambdaNeg?: number;
  /** Sampling-mismatch correction; off by default (null too; needs `samplingLogps` in the batch). */
  importanceSampling?: ImportanceSamplingOptions | null;
  /**
   * Off-policy sequence masking (DeepSeek-V3.2): a row with a negative advantage whose mean
   * log-ratio sampling - current exceeds this is left out of the policy term. Off by default.
   */
  offPolicyMaskThreshold?: number;
  /** Train only on tokens at or above this quantile of the batch's entropies; default 1 (all). */
  topEntropyQuantile?: number;
  /** Multiply the KL by the (undetached) importance ratio (TRL's use_bias_correction_kl); default false. */
  biasCorrectedKl?: boolean;
}

/** A loss config with defaults filled in; `low`/`high` are the ratio bounds 1 - epsilon, 1 + epsilonHigh. */
export interface ResolvedLossConfig {
  lossType: LossType;
  low: number;
  high: number;
  /** epsilonHigh itself (the cispo cap). */
  epsilonHigh: number;
  delta: number;
  beta: number;
  level: ImportanceSamplingLevel;
  maxCompletionLength: number;
  entropyCoef: number;
  sapoTemperaturePos: number;
  sapoTemperatureNeg: number;
  vespoKPos: number;
  vespoLambdaPos: number;
  vespoKNeg: number;
  vespoLambdaNeg: number;
  importanceSampling: { mode: ImportanceSamplingMode; clipMin: number; clipMax: number } | undefined;
  offPolicyMaskThreshold: number | undefined;
  topEntropyQuantile: number;
  biasCorrectedKl: boolean;
}

/** Validates a loss config and fills in TRL's defaults. */
export function resolveLossConfig(config: GrpoLossConfig): ResolvedLossConfig {
  if (config === null || typeof config !== 'object') {
    throw new InvalidInputError('config', `must be an object, got ${describe(config)}.`);
  }
  const lossType = oneOf('lossType', config.lossType ?? 'dapo', LOSS_TYPES);
  const epsilon = finiteNumber('epsilon', config.epsilon ?? 0.2, { min: 0 });
  const epsilonHigh = finiteNumber('epsilonHigh', config.epsilonHigh ?? epsilon, { min: 0 });
  const delta = config.delta === undefined || config.delta === null ? Infinity : finiteNumber('delta', config.delta, { above: 0 });
  const beta = finiteNumber('beta', config.beta ?? 0, { min: 0 });
  const level = oneOf('importanceSamplingLevel', config.importanceSamplingLevel ?? 'token', ['token', 'sequence'] as const);
  if (lossType === 'luspo' && level !== 'sequence') {
    throw new InvalidInputError('importanceSamplingLevel', "must be 'sequence' for lossType 'luspo' (it scales each sequence's loss by its length).");
  }
  const entropyCoef = finiteNumber('entropyCoef', config.entropyCoef ?? 0);
  let maxCompletionLength = 0;
  if (lossType === 'dr_grpo' || config.maxCompletionLength !== undefined) {
    if (config.maxCompletionLength === undefined && lossType === 'dr_grpo') {
      throw new InvalidInputError('maxCompletionLength', "is required by lossType 'dr_grpo' (its loss is divided by B * maxCompletionLength).");
    }
    maxCompletionLength = integerAtLeast('maxCompletionLength', config.maxCompletionLength, 1);
  }
  const sapoTemperaturePos = finiteNumber('sapoTemperaturePos', config.sapoTemperaturePos ?? 1, { above: 0 });
  const sapoTemperatureNeg = finiteNumber('sapoTemperatureNeg', config.sapoTemperatureNeg ?? 1.05, { above: 0 });
  const vespoKPos = finiteNumber('vespoKPos', config.vespoKPos ?? 2);
  const vespoLambdaPos = finiteNumber('vespoLambdaPos', config.vespoLambdaPos ?? 3);
  const vespoKNeg = finiteNumber('vespoKNeg', config.vespoKNeg ?? 3);
  const vespoLambdaNeg = finiteNumber('vespoLambdaNeg', config.vespoLambdaNeg ?? 2);
  const importanceSampling = resolveImportanceSampling(config.importanceSampling, lossType);
  const offPolicyMaskThreshold =
    config.offPolicyMaskThreshold === undefined || config.offPolicyMaskThreshold === null
      ? undefined
      : finiteNumber('offPolicyMaskThreshold', config.offPolicyMaskThreshold);
  const topEntropyQuantile = finiteNumber('topEntropyQuantile', config.topEntropyQuantile ?? 1, { above: 0 });
  if (topEntropyQuantile > 1) {
    throw new InvalidInputError('topEntropyQuantile', `must be in (0, 1] (the share of highest-entropy tokens kept), got ${topEntropyQuantile}.`);
  }
  const biasCorrectedKl = config.biasCorrectedKl ?? false;
  if (typeof biasCorrectedKl !== 'boolean') {
    throw new InvalidInputError('biasCorrectedKl', `must be a boolean, got ${describe(biasCorrectedKl)}.`);
  }
  return {
    lossType,
    low: 1 - epsilon,
    high: 1 + epsilonHigh,
    epsilonHigh,
    delta,
    beta,
    level,
    maxCompletionLength,
    entropyCoef,
    sapoTemperaturePos,
    sapoTemperatureNeg,
    vespoKPos,
    vespoLambdaPos,
    vespoKNeg,
    vespoLambdaNeg,
    importanceSampling,
    offPolicyMaskThreshold,
    topEntropyQuantile,
    biasCorrectedKl,
  };
}

function resolveImportanceSampling(options: ImportanceSamplingOptions | null | undefined, lossType: LossType): ResolvedLossConfig['importanceSampling'] {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') {
    throw new InvalidInputError('importanceSampling', `must be { mode, clipMax?, clipMin? }, got ${describe(options)}.`);
  }
  const mode = oneOf('importanceSampling.mode', options.mode, IMPORTANCE_SAMPLING_MODES);
  if (lossType === 'vespo' && mode.startsWith('sequence')) {
    throw new InvalidInputError(
      'importanceSampling.mode',
      `'${mode}' does not combine with lossType 'vespo', which folds per-token ratios into its sequence weight; use 'token_truncate' or 'token_mask'.`,
    );
  }
  const bound = (name: 'clipMax' | 'clipMin', fallback: number | null) => {
    const value = options[name] === undefined ? fallback : options[name];
    return value === null ? null : finiteNumber(`importanceSampling.${name}`, value, { min: 0 });
  };
  const clipMax = bound('clipMax', 3);
  const clipMin = bound('clipMin', null);
  if (clipMax === null && clipMin === null && mode.endsWith('truncate')) {
    throw new InvalidInputError('importanceSampling', `mode '${mode}' needs clipMax or clipMin (there is nothing to truncate to).`);
  }
  if (clipMax !== null && clipMin !== null && clipMin > clipMax) {
    throw new InvalidInputError('importanceSampling.clipMin', `(${clipMin}) must not exceed clipMax (${clipMax}).`);
  }
  return { mode, clipMin: clipMin ?? -Infinity, clipMax: clipMax ?? Infinity };
}

/**
 * Whether the loss's gradient at a completion depends on that completion's log-probs and
 * entropies alone, beside what the batch fixes before any forward (advantages, masks, token
 * counts, old and sampling log-probs): every type and option but topEntropyQuantile < 1, whose
 * mask cuts at a quantile of the whole batch's entropies. Such a loss can be differentiated part
 * of a batch at a time (a training engine's forwardBackward) to the same gradient.
 */
export function perCompletionGradient(config: GrpoLossConfig): boolean {
  return resolveLossConfig(config).topEntropyQuantile === 1;
}
