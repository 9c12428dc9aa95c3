/** What one dataset item produced in one step: its rollouts, their rewards, the critic's exchanges, warnings. */
import type { ExemplarCandidate, ExperienceOperation } from '../experience/types.js';
import type { FinishReason, PromptInput, Usage } from '../core/policy.js';

export type WarningStage = 'summary' | 'critique' | 'group-update' | 'batch-merge' | 'reward' | 'exemplar';

/** Something the loop skipped or repaired instead of failing: kept with the step and emitted. */
export interface RunWarning {
  step: number;
  /** Dataset index of the item, for item-level warnings. */
  item?: number;
  stage: WarningStage;
  message: string;
}

export interface RolloutRecord {
  text: string;
  tokenIds: number[];
  logprobs: number[];
  /** Log-probs under the filtered distribution the tokens were drawn from, where they differ from `logprobs`. */
  sampledLogprobs?: number[];
  finishReason: FinishReason;
  /** One column per reward function; null where it could not score. */
  rewards: Array<number | null>;
  /** Weighted sum of the scorable columns; null when no function could score. */
  reward: number | null;
  advantage: number;
  /** The critic's summary of this rollout (lessons mode, groups with spread). */
  summary?: string;
  /** Router runs: the id of the arm this completion was routed to. */
  arm?: string;
}

/** One critic exchange: every raw reply (untrusted text, kept for audit) and what was used. */
export interface CriticExchange<T> {
  outputs: string[];
  /** The parsed result; absent when both tries failed (a warning says why). */
  parsed?: T;
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
  /** Library ids put into the prompt. */
  experienceIds: string[];
  rollouts: RolloutRecord[];
  usage: Usage;
  stats: GroupStats;
  /** Dynamic sampling: times the group was sampled again (its rewards all equalled); `rollouts` are the last sampling's. */
  resamples?: number;
  /** Why the critic did not look at this group, when it did not. */
  skipped?: 'zero-spread' | 'no-rewards';
  critique?: CriticExchange<string[]>;
  groupUpdate?: CriticExchange<ExperienceOperation[]>;
  exemplar?: ExemplarCandidate;
  warnings: RunWarning[];
}
