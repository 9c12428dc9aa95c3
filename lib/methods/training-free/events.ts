/**
 * What a training-free run tells its caller, step by step: enough to draw a live UI (every rollout
 * with its text, reward and advantage, the critic's words, the operations and the library after
 * each step) and a progress bar with an ETA.
 */
import type { AppliedOperation, ExperienceLibrary, ExperienceOperation, SkippedOperation } from '../../experience/types.js';
import type { PromptInput } from '../../core/policy.js';
import type { ItemResult, RunWarning, StepStats } from '../../store/records/index.js';
import type { CriticExchange, TrainingFreeConfig } from './record.js';
import type { EvalEvent, ItemRef, Progress, RolloutEvent, RunEnd, StepRef } from '../../run/events.js';

export interface EpochStats {
  epoch: number;
  steps: number;
  groups: number;
  zeroSpreadGroups: number;
  /** Share of groups whose rewards did not differ (nothing to learn from them). */
  zeroSpreadFraction: number;
  rollouts: number;
  scorable: number;
  meanReward: number | null;
  stdReward: number | null;
  lessons: number;
  exemplars: number;
  /** lessons + exemplars at the end of the epoch. */
  librarySize: number;
  operations: { added: number; updated: number; deleted: number; skipped: number };
  warnings: number;
}

export type TrainingFreeEvent =
  | { type: 'run-start'; runId: string; resumed: boolean; config: TrainingFreeConfig; library: ExperienceLibrary; progress: Progress }
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; library: ExperienceLibrary; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput; experienceIds: string[] })
  | RolloutEvent
  | (ItemRef & { type: 'summaries'; summaries: string[] })
  | (ItemRef & { type: 'critique'; exchange: CriticExchange<string[]> })
  | (ItemRef & { type: 'group-update'; exchange: CriticExchange<ExperienceOperation[]> })
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  | { type: 'warning'; warning: RunWarning }
  | (StepRef & {
      type: 'operations';
      merge?: CriticExchange<ExperienceOperation[]>;
      proposed: ExperienceOperation[];
      applied: AppliedOperation[];
      skipped: SkippedOperation[];
      library: ExperienceLibrary;
    })
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; library: ExperienceLibrary; progress: Progress })
  | { type: 'epoch-end'; epoch: number; stats: EpochStats; library: ExperienceLibrary; progress: Progress }
  | EvalEvent
  | (RunEnd & { library: ExperienceLibrary; warnings: number });

export type TrainingFreeEventType = TrainingFreeEvent['type'];
