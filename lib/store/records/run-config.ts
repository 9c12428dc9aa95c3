/**
 * The config fields the loops share, which a method's stored config builds on (each method's
 * record.ts has its own config type).
 */
import type { PolicyInfo } from '../../core/policy.js';
import type { EvaluationConfig } from './evaluation.js';

/**
 * What the configs of runs that sample one policy share: the groups and their schedule, the
 * sampling settings, the rewards, the seed and the policy.
 */
export interface LoopConfig {
  /** Completions per item (the GRPO group). */
  groupSize: number;
  epochs: number;
  /** Items (groups) per step. */
  batchSize: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  maxNewTokens: number;
  /** Reward functions by name and weight, in column order. */
  rewards: Array<{ name: string; weight: number }>;
  seed: number;
  shuffle: boolean;
  policy: PolicyInfo;
  /** Name of the built-in task the dataset came from, if any. */
  task?: string;
  /** The held-out split the run evaluates on, when it was given one. */
  evaluation?: EvaluationConfig;
  /** DAPO's dynamic sampling, when the run uses it. */
  dynamicSampling?: DynamicSamplingConfig;
}

/**
 * DAPO's dynamic sampling: a group whose rewards all equal carries no signal; it is sampled again
 * (fresh seeds) up to `maxResamples` times, and a group still flat is left out of the update.
 */
export interface DynamicSamplingConfig {
  maxResamples: number;
}
