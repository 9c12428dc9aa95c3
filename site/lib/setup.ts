/** The setup form: what a new run is started with. */
import { DYNAMIC_SAMPLING_DEFAULTS } from '../../lib/run/dynamic-sampling.js';

export interface Setup {
  /** A built-in task name, or `upload`. */
  task: string;
  reward: string;
  /** The person rates every completion (the "You" reward) instead of the task's rewards. */
  rateMyself: boolean;
  method: string;
  /**
   * Gradient and LoRA runs: DAPO's dynamic sampling, a group whose rewards all equal sampled again
   * (at most three times) and left out of the update if it stays flat. Off by default, as in TRL.
   */
  dynamicSampling: boolean;
  items: number;
  groupSize: number;
  epochs: number;
  batchSize: number;
  temperature: number;
  maxNewTokens: number;
  seed: number;
  /** Gradient runs: AdamW's learning rate, the adapter's rank, optimizer updates per step. */
  lr: number;
  rank: number;
  iterations: number;
  /** Router runs: the router's learning rate and the samples a query class needs before its weights are used. */
  routerLr: number;
  minSamples: number;
  /** Training-free runs: experiences shown per prompt, the closest to its task (0: all that fit), and exemplars kept. */
  retrieve: number;
  maxExemplars: number;
}

/**
 * Gradient GRPO's settings on the bundled skill model (methods.ts applies them when the method is
 * picked with that model): 80 steps of 8 copy-format prompts at lr 0.01. In Chromium on
 * WebAssembly the head adapter takes copy-format's held-out exact match at temperature 1 from 55%
 * to 73% in about a minute (in Node, on the skill benchmark's held-out problems and the task's
 * exact + partial reward, from 49% to 90%); the greedy model's is 94%: GRPO sharpens a skill the
 * model has. Higher learning rates do worse (in the tab 0.02 for 32 steps: 55% -> 67%; in Node
 * 0.04 for 40 steps: 49% -> 58%), and two prompts and two updates per step (the tiny model's
 * settings) collapse the replies onto one wrong shape.
 */
export const SKILL_GRADIENT_DEFAULTS = { items: 64, groupSize: 8, epochs: 10, batchSize: 8, temperature: 1, maxNewTokens: 16, lr: 0.01, rank: 8, iterations: 1 } as const;

/**
 * LoRA's settings on the bundled skill model: the gradient ones at the learning rate full-depth
 * LoRA takes, rank 8, two epochs (16 steps). In Chromium on WebAssembly copy-format's held-out exact
 * match at temperature 1 went from 55% to 89% in 40 s (desktop Chromium) while greedy stayed at 100%:
 * GRPO sharpens sampling there, which is why the first run is sort-words; in Node, 20 such steps
 * take T=1 from 54% to 91% (test/grad/skill-learning.test.ts).
 */
export const SKILL_LORA_DEFAULTS = { ...SKILL_GRADIENT_DEFAULTS, epochs: 2, lr: 0.002 } as const;

/**
 * LoRA's settings for sort-words on the models pretrained on the skill tasks: the first run, on
 * webgrpo-sorter, whose likeliest reply mostly copies the words in the given order while most
 * held-out problems have a sorted reply among 8 samples (greedy 28%, pass@8 74%): GRPO there
 * teaches rather than sharpens, and it needs many distinct prompts. 96 steps of 16 of 1536 prompts
 * (one pass), DAPO's dynamic sampling, 24 new tokens (a four-word answer is up to 19 characters,
 * which 16 cut). The numbers on webgrpo-sorter under seeds nobody chose are in BENCHMARKS "teach"
 * (the first run on webgrpo-sorter). On webgrpo-skill the same settings were chosen (seed 0, over
 * 40 steps, 112 steps and lr 0.003) and give +7 to +23 greedy, +22 to +26 at T=1 under six other
 * seeds: that model's greedy tops out near its pass@8 (62%), which is why the first run moved to
 * a model made for it.
 */
export const SKILL_LORA_SORT_DEFAULTS = { ...SKILL_LORA_DEFAULTS, items: 1536, epochs: 1, batchSize: 16, maxNewTokens: 24, dynamicSampling: true } as const;

/**
 * The first run a person starts, with no setting changed: LoRA on every layer of webgrpo-sorter (the
 * page's first model) at sort-words, where the greedy model is mostly wrong and every problem has
 * its own answer, so a held-out rise is the model learning, not sharpening a skill it has nor
 * writing one reply for all.
 */
export const INITIAL_SETUP: Setup = {
  task: 'sort-words',
  reward: 'similarity',
  rateMyself: false,
  method: 'lora',
  seed: 0,
  ...SKILL_LORA_SORT_DEFAULTS,
  routerLr: 0.1,
  minSamples: 5,
  retrieve: 0,
  maxExemplars: 8,
};

/** The numeric settings, with the range the form accepts and whether they are whole numbers. */
export type NumericSetting = Exclude<keyof Setup, 'task' | 'reward' | 'method' | 'rateMyself' | 'dynamicSampling'>;

export interface SettingLimits {
  label: string;
  min: number;
  max?: number;
  integer: boolean;
}

export const SETUP_LIMITS: Record<NumericSetting, SettingLimits> = {
  items: { label: 'Prompts', min: 1, max: 4096, integer: true },
  groupSize: { label: 'Group size', min: 2, max: 16, integer: true },
  epochs: { label: 'Epochs', min: 1, max: 20, integer: true },
  batchSize: { label: 'Batch', min: 1, max: 16, integer: true },
  temperature: { label: 'Temperature', min: 0, max: 2, integer: false },
  maxNewTokens: { label: 'Max tokens', min: 1, max: 512, integer: true },
  seed: { label: 'Seed', min: 0, integer: true },
  lr: { label: 'Learning rate', min: 0, max: 1, integer: false },
  rank: { label: 'Rank', min: 1, max: 64, integer: true },
  iterations: { label: 'Updates per step', min: 1, max: 8, integer: true },
  routerLr: { label: 'Learning rate', min: 0, max: 5, integer: false },
  minSamples: { label: 'Samples before routing', min: 0, max: 100, integer: true },
  retrieve: { label: 'Experiences per prompt', min: 0, max: 64, integer: true },
  maxExemplars: { label: 'Exemplars kept', min: 1, max: 256, integer: true },
};

/**
 * What is wrong with a setting as typed, or null. An emptied number field reads as null or NaN;
 * it is a problem to show, never a default to run with silently.
 */
export function settingProblem(key: NumericSetting, value: unknown): string | null {
  const { label, min, max, integer } = SETUP_LIMITS[key];
  const range = max === undefined ? `${min} or more` : `from ${min} to ${max}`;
  const what = integer ? `a whole number ${range}` : `a number ${range}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) return `${label}: enter ${what}.`;
  if ((integer && !Number.isInteger(value)) || value < min || (max !== undefined && value > max)) return `${label}: ${value} is not ${what}.`;
  return null;
}

/** The problems of the settings a method uses (its own extra settings included). */
export function setupProblems(setup: Setup, keys: readonly NumericSetting[]): Partial<Record<NumericSetting, string>> {
  const problems: Partial<Record<NumericSetting, string>> = {};
  for (const key of keys) {
    const problem = settingProblem(key, setup[key]);
    if (problem) problems[key] = problem;
  }
  return problems;
}

/** What a run started with these settings does: the loop's schedule, the dataset in batches. */
export interface RunPlan {
  /** The prompts it trains on: Prompts, or all of a file that holds fewer. */
  prompts: number;
  /** Prompts per step (the last step of an epoch may take fewer). */
  perStep: number;
  groups: number;
  steps: number;
}

/** `available`: how many items an uploaded file holds (the run takes the first Prompts of them). */
export function runPlan(setup: Pick<Setup, 'items' | 'epochs' | 'batchSize'>, available?: number): RunPlan {
  const prompts = available === undefined ? setup.items : Math.min(setup.items, available);
  return { prompts, perStep: Math.min(setup.batchSize, prompts), groups: prompts * setup.epochs, steps: Math.ceil(prompts / setup.batchSize) * setup.epochs };
}

/** What the Dynamic sampling box does, under it: the loop's own resample limit, which the page does not change. */
export const DYNAMIC_SAMPLING_HINT = `A group whose answers all score the same teaches nothing; with this on it is sampled again, up to ${DYNAMIC_SAMPLING_DEFAULTS.maxResamples} times, and left out of the update if it stays flat.`;

/** The settings every run uses, then those of gradient and router runs. */
export const COMMON_SETTINGS: readonly NumericSetting[] = ['items', 'groupSize', 'epochs', 'batchSize', 'temperature', 'maxNewTokens', 'seed'];
export const ADAPTER_SETTINGS: readonly NumericSetting[] = ['lr', 'rank', 'iterations'];
export const ROUTER_SETTINGS: readonly NumericSetting[] = ['routerLr', 'minSamples'];
/** Training-free runs: how much of the library a prompt sees; exemplar runs also how many exemplars they keep. */
export const LESSONS_SETTINGS: readonly NumericSetting[] = ['retrieve'];
export const EXEMPLARS_SETTINGS: readonly NumericSetting[] = ['retrieve', 'maxExemplars'];
