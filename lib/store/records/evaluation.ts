/** A held-out evaluation: how a run is evaluated, what one evaluation found, and how it is kept with the run. */
import type { FinishReason, PromptInput, Usage } from '../../core/policy.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { JsonValue } from '../../core/shape.js';

/**
 * Which samples of an evaluation count as correct: `'exact'`, the text equal to the item's answer
 * (whitespace collapsed, case ignored; items without a text or number answer have no verdict), or
 * one reward function's score at least `atLeast`.
 */
export type CorrectRule = 'exact' | { reward: string; atLeast: number };

/** A loop's held-out evaluation, resolved and stored with the run's config (so a resume evaluates alike). */
export interface EvaluationConfig {
  /** The held-out items (never trained on). */
  items: DatasetItem[];
  /** Evaluate after every `every`-th epoch and after the last; epoch 0 (before training) always. */
  every: number;
  /** Samples per item (pass@k for k up to this). */
  samples: number;
  /** 0 is greedy decoding. Top-k, top-p and min-p are the run's. */
  temperature: number;
  maxNewTokens: number;
  /** Seed of the evaluation's own draws (never the training stream's). */
  seed: number;
  correct: CorrectRule;
  /** Also decode every item greedily (`EvaluationRecord.greedyPass`), when `temperature` is above 0. */
  alsoGreedy?: boolean;
}

/** One sample of an evaluated item: its text, every reward, the combined reward and the verdict. */
export interface EvaluatedSample {
  /** Model output: untrusted text. */
  text: string;
  finishReason: FinishReason;
  /** One column per reward function; null where it could not score. */
  rewards: Array<number | null>;
  /** Weighted sum of the scorable columns; null when no function could score. */
  reward: number | null;
  /** Whether the sample is correct; null where the rule has no verdict (no answer, unscorable). */
  correct: boolean | null;
}

/** One held-out item and its samples. */
export interface EvaluatedItem {
  /** Index in the evaluated dataset. */
  index: number;
  id?: string;
  /** The prompt as the policy saw it (a library's experiences included). */
  prompt: PromptInput;
  answer?: JsonValue;
  samples: EvaluatedSample[];
  /** Mean of the scorable samples' combined rewards. */
  meanReward: number | null;
  /** Correct samples; null when no sample had a verdict. */
  correct: number | null;
}

/** An evaluation's aggregates. */
export interface EvaluationSummary {
  items: number;
  /** Samples per item. */
  samples: number;
  temperature: number;
  /** Temperature 0: one greedy answer per item. */
  greedy: boolean;
  /** Reward function names, in column order. */
  rewardNames: string[];
  /** Mean combined reward over the scorable samples. */
  meanReward: number | null;
  /** Mean of each reward function over the samples it could score, by name. */
  meanRewards: Record<string, number | null>;
  /** Share of correct samples among those with a verdict (the exact-match rate, pass@1's mean). */
  accuracy: number | null;
  /**
   * pass@k for k = 1..samples (key k), the unbiased estimator averaged over the items with a
   * verdict on every sample; empty when there are none.
   */
  passAtK: Record<string, number>;
  /** Items with a verdict on every sample (those pass@k averages over). */
  judged: number;
  usage: Usage;
}

/** What `evaluate` returns: the aggregates and every item. */
export interface Evaluation {
  summary: EvaluationSummary;
  items: EvaluatedItem[];
}

/** An evaluation kept with its run: after which epoch (0: before training) and step it ran. */
export interface EvaluationRecord extends Evaluation {
  epoch: number;
  /** Steps committed when it ran. */
  step: number;
  evaluatedAt: string;
  /** The same items decoded greedily (one reply each), when the config asks `alsoGreedy`. */
  greedyPass?: Evaluation;
}
