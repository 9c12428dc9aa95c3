/**
 * What the records of runs that train an adapter share: their configs' objective and optimizer
 * (gradient runs train the LM head's, lora runs every layer's), their steps' training metrics, and
 * the checks of both as a store or an import reads them.
 */
import type { AdaptiveEntropyOptions } from '../math/adaptive-entropy.js';
import type { GrpoLossExtras } from '../math/batch.js';
import type { ImportanceSamplingLevel, LossType } from '../math/loss.js';
import { IMPORTANCE_SAMPLING_MODES, LOSS_TYPES } from '../math/loss-config.js';
import type { TrainStepMetrics } from '../grad/metrics.js';
import type { LoopConfig } from '../store/records.js';
import { arr, fail, int, num, obj, oneOf, type Obj } from '../core/shape.js';
import { validateLoopConfig } from '../store/validate-fields.js';

/** The config of a run that trains an adapter by GRPO, besides the adapter; `groupSize` is TRL's `numGenerations`. */
export interface TrainingConfig extends LoopConfig {
  /** Optimizer updates per generation batch (TRL's num_iterations). */
  numIterations: number;
  /** The clipped objective: GrpoConfig's fields and the grpoLoss options. */
  loss: {
    lossType: LossType;
    clipParam: number;
    epsilonHigh?: number;
    delta?: number;
    beta: number;
    entropyCoeff: number;
    importanceSamplingLevel: ImportanceSamplingLevel;
    maxCompletionLength?: number;
    scaleRewards: 'group' | 'batch' | 'none';
    /** Completions that hit the length limit count for the advantages but not in the loss. */
    maskTruncatedCompletions?: boolean;
    /** TRL's adaptive entropy control of the bonus coefficient. */
    adaptiveEntropy?: AdaptiveEntropyOptions;
  } & GrpoLossExtras;
  optimizer: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; maxGradNorm: number };
}

/** The metrics of each optimizer update of a step, in order (both kinds' payloads carry them). */
export interface TrainingPayload {
  training: TrainStepMetrics[];
}

/** What gradient and lora configs share: the loop's fields, the updates per batch, the objective and the optimizer. */
export function validateTrainingConfig(value: unknown, at: string): Obj {
  const c = validateLoopConfig(value, at);
  int(c.numIterations, `${at}.numIterations`, 1);
  const loss = obj(c.loss, `${at}.loss`);
  oneOf(loss.lossType, LOSS_TYPES, `${at}.loss.lossType`);
  oneOf(loss.importanceSamplingLevel, ['token', 'sequence'] as const, `${at}.loss.importanceSamplingLevel`);
  oneOf(loss.scaleRewards, ['group', 'batch', 'none'] as const, `${at}.loss.scaleRewards`);
  for (const key of ['clipParam', 'beta', 'entropyCoeff'] as const) num(loss[key], `${at}.loss.${key}`);
  for (const key of ['epsilonHigh', 'delta'] as const) if (loss[key] !== undefined) num(loss[key], `${at}.loss.${key}`);
  if (loss.maxCompletionLength !== undefined) int(loss.maxCompletionLength, `${at}.loss.maxCompletionLength`, 1);
  validateLossExtras(loss, `${at}.loss`);
  const optimizer = obj(c.optimizer, `${at}.optimizer`);
  for (const key of ['lr', 'beta1', 'beta2', 'eps', 'weightDecay'] as const) num(optimizer[key], `${at}.optimizer.${key}`);
  if (typeof optimizer.maxGradNorm !== 'number' || !(optimizer.maxGradNorm >= 0)) fail(`${at}.optimizer.maxGradNorm`, 'expected a number >= 0.');
  return c;
}

/**
 * The newer objective's options a gradient run may carry (all optional): their types here, their
 * values where the trainer is built (`GrpoConfig`, `resolveAdaptiveEntropy`), as for a new run.
 */
function validateLossExtras(loss: Obj, at: string): void {
  for (const key of ['sapoTemperaturePos', 'sapoTemperatureNeg', 'vespoKPos', 'vespoLambdaPos', 'vespoKNeg', 'vespoLambdaNeg', 'offPolicyMaskThreshold', 'topEntropyQuantile'] as const) {
    if (loss[key] !== undefined) num(loss[key], `${at}.${key}`);
  }
  for (const key of ['biasCorrectedKl', 'maskTruncatedCompletions'] as const) {
    if (loss[key] !== undefined && typeof loss[key] !== 'boolean') fail(`${at}.${key}`, 'expected true or false.');
  }
  if (loss.importanceSampling !== undefined && loss.importanceSampling !== null) {
    const correction = obj(loss.importanceSampling, `${at}.importanceSampling`);
    oneOf(correction.mode, IMPORTANCE_SAMPLING_MODES, `${at}.importanceSampling.mode`);
    for (const key of ['clipMax', 'clipMin'] as const) if (correction[key] !== undefined && correction[key] !== null) num(correction[key], `${at}.importanceSampling.${key}`);
  }
  if (loss.adaptiveEntropy !== undefined) {
    const adaptive = obj(loss.adaptiveEntropy, `${at}.adaptiveEntropy`);
    for (const key of ['target', 'delta', 'min', 'max'] as const) if (adaptive[key] !== undefined) num(adaptive[key], `${at}.adaptiveEntropy.${key}`);
  }
}

/** A step's training metrics: each update's loss, gradient norm, entropy and number. */
export function validateTraining(p: Obj, at: string): void {
  arr(p.training, `${at}.training`).forEach((m, i) => {
    const metrics = obj(m, `${at}.training[${i}]`);
    for (const key of ['loss', 'gradNorm', 'entropy'] as const) num(metrics[key], `${at}.training[${i}].${key}`);
    int(metrics.step, `${at}.training[${i}].step`, 1);
  });
}
