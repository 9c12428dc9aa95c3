/**
 * What a LoRA GRPO run tells its caller: the gradient method's events (lib/methods/gradient/events.ts),
 * with the run's LoRA config, and in `step-end` what following the adapter cost the sampler.
 */
import type { PromptInput } from '../../core/policy.js';
import type { ItemResult, StepStats } from '../../store/records.js';
import type { LoraRunConfig } from '../gradient/record.js';
import type { EvalEvent, ItemRef, Progress, RolloutEvent, RunEnd, StepRef } from '../../run/events.js';
import type { TrainStepMetrics } from '../../grad/metrics.js';
import type { GradientEpochStats } from '../grpo-update.js';

export type LoraEvent =
  | { type: 'run-start'; runId: string; resumed: boolean; config: LoraRunConfig; progress: Progress }
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput })
  | RolloutEvent
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  /** One optimizer update (`iteration` of `iterations` on this step's batch). */
  | (StepRef & { type: 'train'; iteration: number; iterations: number; metrics: TrainStepMetrics })
  /**
   * The step's updates, and `refreshMs`: milliseconds the sampler took to follow the adapter: to
   * merge it into the weights and build the session the next step samples from, or (engine
   * 'onnxruntime') to hand over its A and B as graph inputs.
   */
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; training: TrainStepMetrics[]; refreshMs: number; progress: Progress })
  | { type: 'epoch-end'; epoch: number; stats: GradientEpochStats; progress: Progress }
  | EvalEvent
  | RunEnd;

export type LoraEventType = LoraEvent['type'];
