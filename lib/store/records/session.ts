/**
 * Plain-data records of an ask/tell session. Everything here is JSON-safe (no NaN, no typed
 * arrays, no class instances), so a record can go to IndexedDB, a file, a Worker or an HTTP body
 * unchanged.
 */
import type { AdvantageOptions, RewardValue } from '../../math/advantages.js';
import type { ChatMessage, FinishReason, SamplingOptions, TopLogprob } from '../../core/policy.js';

/** A completion's reward: one value, or one per reward function; null where a function could not score it. */
export type Reward = RewardValue | readonly RewardValue[];

/** Small tags a caller attaches to a group (task name, item id...). */
export type GroupMeta = Record<string, string | number | boolean | null>;

/** How advantages are computed from rewards: `computeAdvantages`' options, the group size aside. */
export type GroupAdvantageOptions = Omit<AdvantageOptions, 'groupSize'>;

export interface CompletionRecord {
  /** `<groupId>-<index>`. */
  id: string;
  index: number;
  /** `policy`: sampled by the session's policy. `external`: written elsewhere and told (grpo_server's DPO-like case). */
  source: 'policy' | 'external';
  text: string;
  /** Empty when unknown (a backend that reports no ids, an external completion without a tokenizer). */
  tokenIds: number[];
  /** Per token log p under the group's temperature; empty when unknown. */
  logprobs: number[];
  topLogprobs?: TopLogprob[][];
  /** Why sampling stopped; absent for external completions. */
  finishReason?: FinishReason;
  /** As told, one value per reward function (null: could not score); absent until told. */
  rewards?: (number | null)[];
  /** Weighted sum of `rewards` (computeAdvantages' combined reward); null where unscorable. */
  reward?: number | null;
  /** Group-relative advantage from `computeAdvantages`; absent until the group is told. */
  advantage?: number;
}

/** The sampling settings a group was asked with. */
export interface GroupSampling extends SamplingOptions {
  maxNewTokens?: number;
}

export interface GroupFeedback {
  /** Milliseconds since the epoch of the latest tell. */
  at: number;
  options: GroupAdvantageOptions;
  /** Mean and sample std of the combined rewards; null where undefined (too few scorable rows). */
  mean: number | null;
  std: number | null;
}

export interface GroupRecord {
  id: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Exactly one of `prompt` (raw text) or `messages`. */
  prompt?: string;
  messages?: ChatMessage[];
  /**
   * The exact text the model saw (the chat template applied), when the policy can decode; TRL's
   * standard format needs it for chat prompts.
   */
  promptText?: string;
  promptTokenIds: number[];
  /** The model that wrote the policy completions (`policy.info.model`). */
  model: string;
  sampling: GroupSampling;
  completions: CompletionRecord[];
  /** Set once rewards were told. */
  feedback?: GroupFeedback;
  meta?: GroupMeta;
}

/**
 * Where a session keeps its groups: the seam for persistence. The default keeps them in memory;
 * `openIdbSessionStore` (`webgrpo/idb`) and `openFileSessionStore` (`webgrpo/node`) keep them beside
 * the training runs, so they survive a reload or a restart. The session never mutates an object
 * after putting it, and treats what `get` and `list` return as its own to change, so those must be
 * copies.
 */
export interface SessionStore {
  /** Inserts or replaces the group with `group.id`. */
  put(group: GroupRecord): Promise<void>;
  get(id: string): Promise<GroupRecord | undefined>;
  /** Every group, oldest first. */
  list(): Promise<GroupRecord[]>;
  /** Makes every completed `put` durable; called on shutdown. Optional for stores that write through. */
  flush?(): Promise<void>;
}
