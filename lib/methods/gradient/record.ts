/**
 * The records of a gradient run (`gradientGrpo`: GRPO on an adapter on the LM head): its config,
 * its step payload, its checkpoint, and their checks as a store or an import reads them.
 */
import { readCheckpoint, type HeadAdapterCheckpoint } from '../../grad/format.js';
import type { RecordKind } from '../../store/record-kind.js';
import type { RunRecordOf } from '../../store/records.js';
import { int, num, obj } from '../../core/shape.js';
import { validateTraining, validateTrainingConfig, type TrainingConfig, type TrainingPayload } from '../grpo-record.js';

/** The resolved, serialisable options of a gradient GRPO run (`gradientGrpo`). */
export interface GradientConfig extends TrainingConfig {
  /** The adapter on the LM head: z' = z + scale (h A) B. */
  adapter: { rank: number; scale: number; seed: number; hiddenSize: number; vocabSize: number };
}

/** A gradient step's payload: the metrics of each optimizer update of the step, in order. */
export interface GradientStepPayload extends TrainingPayload {
  kind: 'gradient';
}

declare module '../../store/run-record.js' {
  interface RunKinds {
    gradient: { config: GradientConfig; payload: GradientStepPayload; checkpoint: HeadAdapterCheckpoint };
  }
}

export type GradientRunRecord = RunRecordOf<'gradient'>;

function validateGradientConfig(value: unknown, at: string): void {
  const adapter = obj(validateTrainingConfig(value, at).adapter, `${at}.adapter`);
  for (const key of ['rank', 'hiddenSize', 'vocabSize'] as const) int(adapter[key], `${at}.adapter.${key}`, 1);
  int(adapter.seed, `${at}.adapter.seed`);
  num(adapter.scale, `${at}.adapter.scale`);
}

export const GRADIENT_RECORD: RecordKind = { kind: 'gradient', config: validateGradientConfig, step: validateTraining, adapter: (value, at) => readCheckpoint(value, at).step };
