/**
 * The records of a lora run (`loraGrpo`: GRPO on LoRA on every layer): its config, its step
 * payload, its checkpoint, and their checks as a store or an import reads them.
 */
import { readLoraCheckpoint, type LoraCheckpoint } from '../../lora/format.js';
import { LORA_MODULES, type LoraModule } from '../../lora/weights.js';
import type { RecordKind } from '../../store/record-kind.js';
import type { RunRecordOf } from '../../store/records.js';
import { arr, bool, fail, int, num, obj, oneOf, type Obj } from '../../core/shape.js';
import { validateTraining, validateTrainingConfig, type TrainingConfig, type TrainingPayload } from '../grpo-record.js';

/** The resolved, serialisable options of a full-depth LoRA GRPO run (`loraGrpo`): the gradient run's objective and optimizer, LoRA on every layer. */
export interface LoraRunConfig extends TrainingConfig {
  /**
   * PEFT's LoRA settings; a new adapter's A is drawn from `seed`, B starts at zero. `initial`: the
   * run started from a given adapter (which only its checkpoints keep).
   */
  lora: { r: number; alpha: number; useRslora: boolean; targetModules: LoraModule[]; seed: number; initial?: boolean };
  /** Where the forward and backward run; a resumed run trains there too. Absent in runs stored before the option: 'cpu'. */
  engine?: 'cpu' | 'webgpu' | 'onnxruntime';
}

/** A LoRA step's payload: each update's metrics, and what following the adapter cost the sampler. */
export interface LoraStepPayload extends TrainingPayload {
  kind: 'lora';
  /** Milliseconds to merge the adapter into the model's weights and build the sampler's session after the step's updates. */
  refreshMs: number;
}

declare module '../../store/run-record.js' {
  interface RunKinds {
    lora: { config: LoraRunConfig; payload: LoraStepPayload; checkpoint: LoraCheckpoint };
  }
}

export type LoraRunRecord = RunRecordOf<'lora'>;

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
}

function validateLoraStep(p: Obj, at: string): void {
  validateTraining(p, at);
  if (num(p.refreshMs, `${at}.refreshMs`) < 0) fail(`${at}.refreshMs`, 'expected a number >= 0.');
}

export const LORA_RECORD: RecordKind = { kind: 'lora', config: validateLoraConfig, step: validateLoraStep, adapter: (value, at) => readLoraCheckpoint(value, at).step };
