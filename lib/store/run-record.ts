/** A stored run: its status, its starting library, its config by kind, its evaluations. */
import type { ExperienceLibrary } from '../experience/types.js';
import type { EvaluationRecord } from './evaluation-record.js';
import type { GradientConfig, LoraRunConfig, RouterConfig, TrainingFreeConfig } from './run-config.js';

export type RunStatus = 'running' | 'aborted' | 'failed' | 'completed';

interface RunRecordBase {
  id: string;
  status: RunStatus;
  /** Why the run failed or stopped, when it did. */
  error?: string;
  createdAt: string;
  updatedAt: string;
  /** The experience library the run starts from (always empty for gradient and router runs). */
  initialLibrary: ExperienceLibrary;
  itemCount: number;
  /** Evaluations on the run's held-out split, by epoch (0: before the first step). */
  evaluations?: EvaluationRecord[];
}

export interface TrainingFreeRunRecord extends RunRecordBase {
  kind: 'training-free';
  config: TrainingFreeConfig;
}

export interface GradientRunRecord extends RunRecordBase {
  kind: 'gradient';
  config: GradientConfig;
}

export interface LoraRunRecord extends RunRecordBase {
  kind: 'lora';
  config: LoraRunConfig;
}

export interface RouterRunRecord extends RunRecordBase {
  kind: 'router';
  config: RouterConfig;
}

/** A stored run; `kind` tells which loop runs it (and the shape of its config). */
export type RunRecord = TrainingFreeRunRecord | GradientRunRecord | LoraRunRecord | RouterRunRecord;
