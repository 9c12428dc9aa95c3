/**
 * What a gradient GRPO run tells its caller, in the same shape as the training-free loop's events
 * (lib/methods/training-free/events.ts): the same progress object, the same per-item events (prompt, rollouts,
 * rewards, advantages, item-end), and in place of the critic and the library one `train` event per
 * optimizer update with its metrics (loss, KL, entropy, clip ratios, rewards, advantages, gradient
 * norm), and the step's metrics in `step-end`. A LoRA run's (`LoraEvent`) carry its LoRA config,
 * and in `step-end` what following the adapter cost the sampler.
 */
import type { PromptInput } from '../../core/policy.js';
import type { ItemResult, StepStats } from '../../store/records/index.js';
import type { GradientConfig, LoraRunConfig } from './record.js';
import type { EvalEvent, ItemRef, Progress, RolloutEvent, RunEnd, StepRef } from '../../run/events.js';
import type { TrainStepMetrics } from '../../train/metrics.js';
import type { GradientEpochStats } from './update.js';
import type { MemoryPlan } from '../../train/memory-plan.js';

export type { GradientEpochStats } from './update.js';

/** The events both adapters' runs share. */
type TrainingEvent =
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput })
  | RolloutEvent
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  /** One optimizer update (`iteration` of `iterations` on this step's batch). */
  | (StepRef & { type: 'train'; iteration: number; iterations: number; metrics: TrainStepMetrics })
  | { type: 'epoch-end'; epoch: number; stats: GradientEpochStats; progress: Progress }
  | EvalEvent
  | RunEnd;

export type GradientEvent =
  | TrainingEvent
  | { type: 'run-start'; runId: string; resumed: boolean; config: GradientConfig; progress: Progress }
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; training: TrainStepMetrics[]; progress: Progress });

export type GradientEventType = GradientEvent['type'];

export type LoraEvent =
  | TrainingEvent
  /** `memory`: whether the run holds the sampler and the step together or in turns, and why (its memoryBudget against estimateStepMemory). */
  | { type: 'run-start'; runId: string; resumed: boolean; config: LoraRunConfig; memory: MemoryPlan; progress: Progress }
  /**
   * The step's updates, and `refreshMs`: milliseconds the sampler took to follow the adapter: to
   * merge it into the weights and build the session the next step samples from, or (engine
   * 'onnxruntime') to hand over its A and B as graph inputs.
   */
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; training: TrainStepMetrics[]; refreshMs: number; progress: Progress });

export type LoraEventType = LoraEvent['type'];
