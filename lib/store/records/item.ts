/**
 * What one dataset item produced in one step: its rollouts, their rewards, warnings. A method adds
 * its own fields to `ItemResult`, `RolloutRecord` and `WarningStages` in its record.ts
 * (`declare module`; run.ts's `RunKinds` lists where, and says why); the store checks them
 * through the method's `RecordKind`.
 */
import type { Completion, PromptInput, Usage } from '../../core/policy.js';

/** Where in a step a warning arose, by name: the driver's own, and each method's (added in its record.ts). */
export interface WarningStages {
  reward: true;
}
export type WarningStage = keyof WarningStages;

/** Something the loop skipped or repaired instead of failing: kept with the step and emitted. */
export interface RunWarning {
  step: number;
  /** Dataset index of the item, for item-level warnings. */
  item?: number;
  stage: WarningStage;
  message: string;
}

/** A scored completion: the completion's text, tokens and log-probs as sampled, its rewards and advantage. */
export interface RolloutRecord extends Pick<Completion, 'text' | 'tokenIds' | 'logprobs' | 'sampledLogprobs' | 'finishReason'> {
  /** One column per reward function; null where it could not score. */
  rewards: Array<number | null>;
  /** Weighted sum of the scorable columns; null when no function could score. */
  reward: number | null;
  advantage: number;
}

export interface GroupStats {
  scorable: number;
  mean: number | null;
  std: number | null;
  /** max - min of the scorable rewards (0 with fewer than two). */
  spread: number;
}

/** Everything one dataset item produced in one step. */
export interface ItemResult {
  step: number;
  epoch: number;
  /** Index into the run's dataset. */
  index: number;
  /** Position in the step's batch. */
  position: number;
  /** The prompt as the policy saw it, experiences included. */
  prompt: PromptInput;
  /** Ids of the method's entries put into the prompt (the experience library's), empty for most methods. */
  experienceIds: string[];
  rollouts: RolloutRecord[];
  usage: Usage;
  stats: GroupStats;
  /** Dynamic sampling: times the group was sampled again (its rewards all equalled); `rollouts` are the last sampling's. */
  resamples?: number;
  warnings: RunWarning[];
}
