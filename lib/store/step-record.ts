/** One committed step: the fields every method's steps share, and each method's payload. */
import type { ApplyResult, ExperienceLibrary, ExperienceOperation } from '../experience/types.js';
import type { AdapterCheckpoint } from '../grad/format.js';
import type { TrainStepMetrics } from '../grad/metrics.js';
import type { GrpoRouterState, RouterUpdateStats } from '../route/router.js';
import type { CriticExchange, ItemResult, RunWarning } from './item-result.js';

export interface StepStats {
  groups: number;
  zeroSpreadGroups: number;
  rollouts: number;
  scorable: number;
  meanReward: number | null;
  stdReward: number | null;
  /** Runs with dynamic sampling: groups sampled again because their rewards all equalled, and the extra samplings. */
  resampledGroups?: number;
  resamples?: number;
  /** Runs with dynamic sampling: groups still flat after resampling, left out of the update. */
  droppedGroups?: number;
}

/**
 * What a method adds to its step records: an object whose `kind` is the run's kind. The store,
 * validation and export hand it to the method's `record` (`RecordKind`) by that kind.
 */
export interface StepPayloadBase {
  kind: string;
}

/** A training-free step's payload: the batch update and the library after it. */
export interface TrainingFreeStepPayload {
  kind: 'training-free';
  /** Lessons mode: the batch merge exchange (absent when no group proposed anything). */
  merge?: CriticExchange<ExperienceOperation[]>;
  /** The operations handed to `applyOperations` (or the exemplar candidates' outcome). */
  proposed: ExperienceOperation[];
  applied: ApplyResult['applied'];
  skippedOperations: ApplyResult['skipped'];
  /** The library after the step (the library before step 1 is the run's `initialLibrary`). */
  library: ExperienceLibrary;
}

/** A gradient step's payload: the metrics of each optimizer update of the step, in order. */
export interface GradientStepPayload {
  kind: 'gradient';
  training: TrainStepMetrics[];
}

/** A LoRA step's payload: each update's metrics, and what following the adapter cost the sampler. */
export interface LoraStepPayload {
  kind: 'lora';
  training: TrainStepMetrics[];
  /** Milliseconds to merge the adapter into the model's weights and build the sampler's session after the step's updates. */
  refreshMs: number;
}

/** A router step's payload: the router after the step's update. */
export interface RouterStepPayload {
  kind: 'router';
  routing: StepRouting;
}

/** The built-in methods' step payloads. */
export type StepPayload = TrainingFreeStepPayload | GradientStepPayload | LoraStepPayload | RouterStepPayload;

/** The payload of a kind: a built-in one's own type, or any object of that kind for another method. */
export type PayloadOf<K extends string> = K extends StepPayload['kind'] ? Extract<StepPayload, { kind: K }> : StepPayloadBase & { kind: K };

/**
 * One committed step (one batch): the fields every method's steps share, and the method's
 * `payload`. `P` is the payload type; a method declares its own as `StepRecord<MyPayload>`.
 */
export interface StepRecord<P extends StepPayloadBase = StepPayload> {
  /** 1-based. */
  step: number;
  epoch: number;
  batch: number;
  items: ItemResult[];
  stats: StepStats;
  /** Step-level warnings (the batch merge); item warnings stay with their items. */
  warnings: RunWarning[];
  committedAt: string;
  /** The method's part of the step; `payload.kind` is the run's kind. */
  payload: P;
}

/** The router after a step: its state (what a resume restores), what it would route to, the update. */
export interface StepRouting {
  state: GrpoRouterState;
  /** `probabilities[queryClass][armId]`, for every query class seen so far. */
  probabilities: Record<string, Record<string, number>>;
  stats: RouterUpdateStats;
}

/** Store-side extras of a step commit, written in the same transaction. */
export interface StepExtras {
  /** Gradient and lora runs: the adapter and optimizer after the step (the store keeps the latest). */
  adapter?: AdapterCheckpoint;
}
