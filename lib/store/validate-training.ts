/**
 * The records of runs that train an adapter: gradient runs (the LM head) and lora runs (every
 * layer). Their configs share the objective and the optimizer, their steps the training metrics,
 * and each keeps its own kind of adapter checkpoint, checked here as an import reads it.
 */
import { readCheckpoint } from '../grad/format.js';
import { readLoraCheckpoint } from '../lora/format.js';
import { LORA_MODULES } from '../lora/weights.js';
import { IMPORTANCE_SAMPLING_MODES, LOSS_TYPES } from '../math/loss-config.js';
import type { RecordKind } from './record-kind.js';
import type { GradientConfig, LoraRunConfig } from './records.js';
import { arr, bool, fail, int, num, obj, oneOf, type Obj } from '../core/shape.js';
import { validateLoopConfig } from './validate-fields.js';

function validateGradientConfig(value: unknown, at: string): GradientConfig {
  const c = validateTrainingConfig(value, at);
  const adapter = obj(c.adapter, `${at}.adapter`);
  for (const key of ['rank', 'hiddenSize', 'vocabSize'] as const) int(adapter[key], `${at}.adapter.${key}`, 1);
  int(adapter.seed, `${at}.adapter.seed`);
  num(adapter.scale, `${at}.adapter.scale`);
  return c as unknown as GradientConfig;
}

function validateLoraConfig(value: unknown, at: string): LoraRunConfig {
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
  return c as unknown as LoraRunConfig;
}

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

function validateTraining(p: Obj, at: string): void {
  arr(p.training, `${at}.training`).forEach((m, i) => {
    const metrics = obj(m, `${at}.training[${i}]`);
    for (const key of ['loss', 'gradNorm', 'entropy'] as const) num(metrics[key], `${at}.training[${i}].${key}`);
    int(metrics.step, `${at}.training[${i}].step`, 1);
  });
}

function validateLoraStep(p: Obj, at: string): void {
  validateTraining(p, at);
  if (num(p.refreshMs, `${at}.refreshMs`) < 0) fail(`${at}.refreshMs`, 'expected a number >= 0.');
}

export const GRADIENT_RECORD: RecordKind = { kind: 'gradient', config: validateGradientConfig, step: validateTraining, adapter: (value, at) => readCheckpoint(value, at).step };
export const LORA_RECORD: RecordKind = { kind: 'lora', config: validateLoraConfig, step: validateLoraStep, adapter: (value, at) => readLoraCheckpoint(value, at).step };
