/** What a reward function is handed and what it returns: the contract between a task and the loops. */
import type { DatasetItem } from './dataset.js';
import type { Completion, PromptInput } from './policy.js';

export interface RewardContext {
  /** The completion's text (what most rewards look at). */
  text: string;
  completion: Completion;
  item: DatasetItem;
  /** The prompt as the policy saw it (experiences included). */
  prompt: PromptInput;
  /** Row of the completion in its group. */
  row: number;
}

/**
 * A verifiable reward. Return a finite number, or `null` when this function cannot score the
 * completion (it then counts as missing, as in TRL, not as zero).
 */
export interface RewardFunction {
  name: string;
  /** Weight in the combined reward. Default 1. */
  weight?: number;
  score(context: RewardContext): number | null | Promise<number | null>;
}
