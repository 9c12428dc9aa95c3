/**
 * The options every gradient run takes, whichever adapter it trains: the objective, the schedule,
 * sampling and the optimizer, their defaults, and their validation into the stored config's
 * common part. Each adapter adds its own options (options.ts, lora.ts).
 */
import { InvalidInputError } from '../../errors.js';
import { resolveOptimizer, type OptimizerOptions } from '../../train/optimizer.js';
import { resolveAdaptiveEntropy, type AdaptiveEntropyOptions } from '../../math/adaptive-entropy.js';
import { GrpoConfig, type GrpoLossExtras } from '../../math/batch.js';
import type { ImportanceSamplingLevel, LossType } from '../../math/loss-config.js';
import { resolveDynamicSampling, type DynamicSamplingOptions } from '../../run/dynamic-sampling.js';
import { GROUP_SAMPLING_DEFAULTS, integer, real, type GroupSamplingOptions, type LoopHandles } from '../../run/options.js';
import type { GradientConfig } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { EvaluationOption } from '../../run/held-out.js';

/**
 * The objective: GrpoConfig's fields, TRL's newer loss options (`GrpoLossExtras`: cispo, sapo,
 * luspo, vespo parameters, the sampling correction, masks, bias-corrected KL) and the trainer's.
 * `importanceSampling` left out means TRL's default: 'sequence_mask' with clipMax 3 whenever the
 * rollouts were sampled with topK / topP / minP (null turns it off).
 */
export interface GradientLossOptions extends GrpoLossExtras {
  /** Default 'dapo'. */
  lossType?: LossType;
  /** PPO clipping range; default 0.2. */
  clipParam?: number;
  epsilonHigh?: number;
  delta?: number;
  /** KL coefficient toward the base model; default 0.01. */
  beta?: number;
  /** Entropy bonus; default 0.01. */
  entropyCoeff?: number;
  importanceSamplingLevel?: ImportanceSamplingLevel;
  maxCompletionLength?: number;
  /** Advantage scaling: by the group's std (default), the batch's, or none. */
  scaleRewards?: 'group' | 'batch' | 'none';
  /**
   * TRL's mask_truncated_completions: completions that hit `maxNewTokens` keep their reward in the
   * group's advantages but are left out of the loss. Default false.
   */
  maskTruncatedCompletions?: boolean;
  /** TRL's use_adaptive_entropy: `entropyCoeff` is the start, moved after every update toward `target`. */
  adaptiveEntropy?: AdaptiveEntropyOptions;
}

/** The values `gradientGrpo` and `loraGrpo` use for options left out (group size, epochs, batch size, iterations, temperature, seed, reward scaling). */
export const GRADIENT_DEFAULTS = {
  groupSize: 8,
  epochs: 1,
  batchSize: 2,
  numIterations: 1,
  temperature: 1,
  seed: 0,
  ...GROUP_SAMPLING_DEFAULTS,
  scaleRewards: 'group' as const,
};

/** What every gradient run takes besides its handles and its adapter's options. */
export interface TrainingRunOptions extends GroupSamplingOptions, EvaluationOption {
  dataset: DatasetItem[];
  /** Completions per item; default 8. */
  groupSize?: number;
  /** Passes over the dataset; default 1. */
  epochs?: number;
  /** Items per step (one generation batch, one or more updates); default 2. */
  batchSize?: number;
  /** Optimizer updates per generation batch; default 1. */
  numIterations?: number;
  /** Sampling temperature (log-probs are of softmax(z / T)); default 1. */
  temperature?: number;
  /** Seed of the epoch order, every sampling call and a new adapter's A; default 0. */
  seed?: number;
  /** The objective (every grpoLoss option). */
  loss?: GradientLossOptions;
  /** AdamW; the learning rate defaults to the method's (GRADIENT_DEFAULTS.lr, LORA_GRPO_DEFAULTS.lr). */
  optimizer?: OptimizerOptions;
  /** DAPO's dynamic sampling: flat groups sampled again, then left out of the update (`true`: at most 3 resamplings). Default off. */
  dynamicSampling?: DynamicSamplingOptions | boolean;
  /** Name of the built-in task the dataset came from (recorded with the run). */
  task?: string;
  /** Id of the new run. Default: a random UUID. */
  runId?: string;
}

/** The shared options with their handles, as resolveTrainingConfig checks them. */
export type TrainingOptions = LoopHandles & TrainingRunOptions;

/** The objective, schedule, sampling and optimizer of a run that trains an adapter; `lr` is the method's default learning rate. */
export function resolveTrainingConfig(options: TrainingOptions, lr?: number): Omit<GradientConfig, 'adapter'> {
  const d = GRADIENT_DEFAULTS;
  const loss = options.loss ?? {};
  const groupSize = integer(options.groupSize, 'groupSize', d.groupSize, 2, 64);
  // GrpoConfig validates the objective's options the way the trainer will use them.
  const { scaleRewards: _scale, maskTruncatedCompletions, adaptiveEntropy, ...objective } = loss;
  const grpo = new GrpoConfig({ numGenerations: groupSize, ...objective });
  if (maskTruncatedCompletions !== undefined && typeof maskTruncatedCompletions !== 'boolean') {
    throw new InvalidInputError('loss.maskTruncatedCompletions', 'expected true or false.');
  }
  if (adaptiveEntropy !== undefined) resolveAdaptiveEntropy(adaptiveEntropy);
  const scaleRewards = loss.scaleRewards ?? d.scaleRewards;
  if (!['group', 'batch', 'none'].includes(scaleRewards)) throw new InvalidInputError('loss.scaleRewards', `expected "group", "batch" or "none", got ${String(scaleRewards)}.`);
  const seed = integer(options.seed, 'seed', d.seed, 0, 2 ** 32 - 1);
  const config: Omit<GradientConfig, 'adapter'> = {
    groupSize,
    epochs: integer(options.epochs, 'epochs', d.epochs, 1, 10_000),
    batchSize: integer(options.batchSize, 'batchSize', d.batchSize, 1),
    numIterations: integer(options.numIterations, 'numIterations', d.numIterations, 1, 100),
    temperature: real(options.temperature, 'temperature', d.temperature, 0, 100, true),
    topK: integer(options.topK, 'topK', d.topK, 0),
    topP: real(options.topP, 'topP', d.topP, 0, 1, true),
    minP: real(options.minP, 'minP', d.minP, 0, 1),
    maxNewTokens: integer(options.maxNewTokens, 'maxNewTokens', d.maxNewTokens, 1),
    rewards: options.rewards.map((r) => ({ name: r.name, weight: r.weight ?? 1 })),
    seed,
    shuffle: options.shuffle ?? d.shuffle,
    loss: {
      lossType: grpo.lossType,
      clipParam: grpo.clipParam,
      ...(grpo.epsilonHigh !== undefined ? { epsilonHigh: grpo.epsilonHigh } : {}),
      ...(grpo.delta !== undefined ? { delta: grpo.delta } : {}),
      beta: grpo.beta,
      entropyCoeff: grpo.entropyCoeff,
      importanceSamplingLevel: grpo.importanceSamplingLevel,
      ...(grpo.maxCompletionLength !== undefined ? { maxCompletionLength: grpo.maxCompletionLength } : {}),
      ...grpo.lossExtras,
      scaleRewards,
      ...(maskTruncatedCompletions !== undefined ? { maskTruncatedCompletions } : {}),
      ...(adaptiveEntropy !== undefined ? { adaptiveEntropy: { ...adaptiveEntropy } } : {}),
    },
    optimizer: resolveOptimizer(lr === undefined ? options.optimizer : { lr, ...dropUndefined(options.optimizer) }),
    policy: { ...options.policy.info },
  };
  if (typeof config.shuffle !== 'boolean') throw new InvalidInputError('shuffle', 'expected true or false.');
  const dynamicSampling = resolveDynamicSampling(options.dynamicSampling);
  if (dynamicSampling) config.dynamicSampling = dynamicSampling;
  if (options.task !== undefined) config.task = options.task;
  return config;
}

function dropUndefined(options: OptimizerOptions | undefined): OptimizerOptions {
  if (options === undefined) return {};
  // Anything but an object is refused as the optimizer's own check refuses it.
  if (options === null || typeof options !== 'object') resolveOptimizer(options);
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}


/** GrpoConfig from a stored config (the loss options GrpoConfig does not carry go to the trainer). */
export function grpoConfigOf(config: Pick<GradientConfig, 'loss' | 'groupSize'>): GrpoConfig {
  const { scaleRewards: _scale, maskTruncatedCompletions: _mask, adaptiveEntropy: _adaptive, ...loss } = config.loss;
  return new GrpoConfig({ numGenerations: config.groupSize, ...loss });
}
