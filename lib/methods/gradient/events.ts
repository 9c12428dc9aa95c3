/**
 * What a gradient GRPO run tells its caller, in the same shape as the training-free loop's events
 * (lib/methods/training-free/events.ts): the same progress object, the same per-item events (prompt, rollouts,
 * rewards, advantages, item-end), and in place of the critic and the library one `train` event per
 * optimizer update with its metrics (loss, KL, entropy, clip ratios, rewards, advantages, gradient
 * norm), and the step's metrics in `step-end`.
 */
import type { PromptInput } from '../../core/policy.js';
import type { ItemResult, StepStats } from '../../store/records.js';
import type { GradientConfig } from './record.js';
import type { EvalEvent, ItemRef, Progress, RolloutEvent, RunEnd, StepRef } from '../../run/events.js';
import type { TrainStepMetrics } from '../../grad/metrics.js';
import type { GradientEpochStats } from '../grpo-update.js';

export type { GradientEpochStats } from '../grpo-update.js';

export type GradientEvent =
  | { type: 'run-start'; runId: string; resumed: boolean; config: GradientConfig; progress: Progress }
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput })
  | RolloutEvent
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  /** One optimizer update (`iteration` of `iterations` on this step's batch). */
  | (StepRef & { type: 'train'; iteration: number; iterations: number; metrics: TrainStepMetrics })
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; training: TrainStepMetrics[]; progress: Progress })
  | { type: 'epoch-end'; epoch: number; stats: GradientEpochStats; progress: Progress }
  | EvalEvent
  | RunEnd;

export type GradientEventType = GradientEvent['type'];
