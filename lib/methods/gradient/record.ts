/**
 * The records of gradient runs, GRPO on an adapter: the LM head's (kind `gradient`) or LoRA on
 * every layer (kind `lora`). Their configs share the objective and the optimizer, their steps the
 * training metrics, and each keeps its own kind of adapter checkpoint; here are their types and
 * their checks as a store or an import reads them.
 */
import type { AdaptiveEntropyOptions } from '../../math/adaptive-entropy.js';
import type { GrpoLossExtras } from '../../math/batch.js';
import type { ImportanceSamplingLevel, LossType } from '../../math/loss-config.js';
import { IMPORTANCE_SAMPLING_MODES, LOSS_TYPES } from '../../math/loss-config.js';
import { readCheckpoint, type HeadAdapterCheckpoint } from '../../train/head/format.js';
import type { TrainStepMetrics } from '../../train/metrics.js';
import { readLoraCheckpoint, type LoraCheckpoint } from '../../lora/format.js';
import { LORA_MODULES, type LoraModule } from '../../weights/decoder.js';
import type { RecordKind } from '../../store/records/kind.js';
import type { LoopConfig, RunRecordOf } from '../../store/records/index.js';
import { arr, bool, fail, int, num, obj, oneOf, str, type Obj } from '../../core/shape.js';
import { validateLoopConfig } from '../../store/records/validate.js';

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

/** The resolved, serialisable options of a gradient GRPO run (`gradientGrpo`). */
export interface GradientConfig extends TrainingConfig {
  /** The adapter on the LM head: z' = z + scale (h A) B. */
  adapter: { rank: number; scale: number; seed: number; hiddenSize: number; vocabSize: number };
}

/** A gradient step's payload: the metrics of each optimizer update of the step, in order. */
export interface GradientStepPayload extends TrainingPayload {
  kind: 'gradient';
}

/** The resolved, serialisable options of a full-depth LoRA GRPO run (`loraGrpo`): the gradient run's objective and optimizer, LoRA on every layer. */
export interface LoraRunConfig extends TrainingConfig {
  /**
   * PEFT's LoRA settings; a new adapter's A is drawn from `seed`, B starts at zero. `initial`: the
   * run started from a given adapter (which only its checkpoints keep).
   */
  lora: { r: number; alpha: number; useRslora: boolean; targetModules: LoraModule[]; seed: number; initial?: boolean };
  /** Where the forward and backward run; a resumed run trains there too. Absent in runs stored before the option: 'cpu'. */
  engine?: 'cpu' | 'webgpu' | 'onnxruntime';
  /** The policy's backend the training graphs ran on ('cpu' in Node, 'wasm', 'webgpu'); absent in runs stored before it was kept. */
  backend?: string;
  /** The bytes the run may take, the sampler's session included (LoraGrpoOptions.memoryBudget); absent: the engine's defaults. */
  memoryBudget?: number;
  /** The sampler and the training engine hold their weights in turns, or 'auto': when only that fits memoryBudget (LoraGrpoOptions.takeTurns); absent: false. */
  takeTurns?: boolean | 'auto';
}

/** A LoRA step's payload: each update's metrics, and what following the adapter cost the sampler. */
export interface LoraStepPayload extends TrainingPayload {
  kind: 'lora';
  /** Milliseconds to merge the adapter into the model's weights and build the sampler's session after the step's updates. */
  refreshMs: number;
}

declare module '../../store/records/run.js' {
  interface RunKinds {
    gradient: { config: GradientConfig; payload: GradientStepPayload; checkpoint: HeadAdapterCheckpoint };
    lora: { config: LoraRunConfig; payload: LoraStepPayload; checkpoint: LoraCheckpoint };
  }
}

export type GradientRunRecord = RunRecordOf<'gradient'>;
export type LoraRunRecord = RunRecordOf<'lora'>;

/** What gradient and lora configs share: the loop's fields, the updates per batch, the objective and the optimizer. */
function validateTrainingConfig(value: unknown, at: string): Obj {
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
function validateTraining(p: Obj, at: string): void {
  arr(p.training, `${at}.training`).forEach((m, i) => {
    const metrics = obj(m, `${at}.training[${i}]`);
    for (const key of ['loss', 'gradNorm', 'entropy'] as const) num(metrics[key], `${at}.training[${i}].${key}`);
    int(metrics.step, `${at}.training[${i}].step`, 1);
  });
}

function validateGradientConfig(value: unknown, at: string): void {
  const adapter = obj(validateTrainingConfig(value, at).adapter, `${at}.adapter`);
  for (const key of ['rank', 'hiddenSize', 'vocabSize'] as const) int(adapter[key], `${at}.adapter.${key}`, 1);
  int(adapter.seed, `${at}.adapter.seed`);
  num(adapter.scale, `${at}.adapter.scale`);
}

/** How a store checks and reads back a head-adapter gradient run (`kind: 'gradient'`): its config, step payloads and stored adapter. */
export const GRADIENT_RECORD: RecordKind = { kind: 'gradient', config: validateGradientConfig, step: validateTraining, adapter: (value, at) => readCheckpoint(value, at).step };

function validateLoraConfig(value: unknown, at: string): void {
  const c = validateTrainingConfig(value, at);
  const lora = obj(c.lora, `${at}.lora`);
  int(lora.r, `${at}.lora.r`, 1);
  int(lora.seed, `${at}.lora.seed`);
  if (num(lora.alpha, `${at}.lora.alpha`) <= 0) fail(`${at}.lora.alpha`, 'expected a number > 0.');
  bool(lora.useRslora, `${at}.lora.useRslora`);
  if (lora.initial !== undefined) bool(lora.initial, `${at}.lora.initial`);
  const targets = arr(lora.targetModules, `${at}.lora.targetModules`);
  if (targets.length === 0) fail(`${at}.lora.targetModules`, 'expected at least one module.');
  targets.forEach((t, i) => oneOf(t, LORA_MODULES, `${at}.lora.targetModules[${i}]`));
  if (c.engine !== undefined) oneOf(c.engine, ['cpu', 'webgpu', 'onnxruntime'] as const, `${at}.engine`);
  if (c.backend !== undefined && str(c.backend, `${at}.backend`).length === 0) fail(`${at}.backend`, 'expected a backend name.');
  if (c.memoryBudget !== undefined && !(num(c.memoryBudget, `${at}.memoryBudget`) > 0)) fail(`${at}.memoryBudget`, 'expected a number of bytes > 0.');
  if (c.takeTurns !== undefined && c.takeTurns !== 'auto') bool(c.takeTurns, `${at}.takeTurns`);
}

function validateLoraStep(p: Obj, at: string): void {
  validateTraining(p, at);
  if (num(p.refreshMs, `${at}.refreshMs`) < 0) fail(`${at}.refreshMs`, 'expected a number >= 0.');
}

/** How a store checks and reads back a LoRA run (`kind: 'lora'`): its config, step payloads and stored adapter. */
export const LORA_RECORD: RecordKind = { kind: 'lora', config: validateLoraConfig, step: validateLoraStep, adapter: (value, at) => readLoraCheckpoint(value, at).step };
