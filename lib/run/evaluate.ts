/**
 * Held-out evaluation: sample every item of a dataset from any policy, score each sample with the
 * reward functions as a run does (`rewardTable`: null is unscorable, anything else non-finite is an
 * error), and aggregate: mean combined reward, the mean of each reward function, the exact-match
 * rate and pass@k. The same call measures a base model, an adapter, an endpoint or an experience
 * library before and after training; the loops call it on their held-out split (driver.ts).
 */
import { InvalidInputError, throwIfAborted, WebgrpoError } from '../errors.js';
import { promptWithLibrary, type LibraryPromptOptions } from '../experience/render.js';
import type { ExperienceLibrary } from '../experience/types.js';
import { combinedRewards } from '../math/advantages.js';
import { passAtK } from '../math/pass-at-k.js';
import { mean } from '../math/stats.js';
import { generateGroups } from '../policy/groups.js';
import type { GenerateGroupOptions, Policy, PromptInput } from '../core/policy.js';
import type { CorrectRule, EvaluatedItem, EvaluatedSample, Evaluation, EvaluationSummary } from '../store/records/index.js';
import type { DatasetItem } from '../core/dataset.js';
import { validateDataset } from '../core/dataset.js';
import { GROUP_SAMPLING_DEFAULTS, integer, real, validateHandles } from './options.js';
import type { RewardFunction } from '../core/reward.js';
import { deriveSeed } from './random.js';
import { promptOf, rewardTable } from './rollout.js';

/** What a correctness predicate sees of a sample. */
export interface JudgedSample {
  text: string;
  item: DatasetItem;
  /** Each reward function's score by name (null: could not score). */
  rewards: Record<string, number | null>;
  reward: number | null;
}

export interface EvaluateProgress {
  /** Items evaluated so far, of `total`. */
  done: number;
  total: number;
}

export interface EvaluateOptions {
  policy: Policy;
  dataset: DatasetItem[];
  /** Scored as in a run; their weights make the combined reward. */
  rewards: RewardFunction[];
  /** Samples per item; pass@k is reported for k up to this. Default 1. */
  samples?: number;
  /** Default 1; 0 decodes greedily (one sample per item: more would all be the same). */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  /** Default 32. */
  maxNewTokens?: number;
  /** Seed of the draws; item i is sampled from its own seed derived from it. Default 0. */
  seed?: number;
  /**
   * Which samples are correct: `'exact'` (the default: the text equals the item's answer,
   * whitespace collapsed and case ignored), `{ reward, atLeast }` (that reward function's score
   * at least `atLeast`, default 1), or a predicate. A sample without a verdict (no answer, an
   * unscorable reward) counts for neither accuracy nor pass@k.
   */
  correct?: CorrectRule | { reward: string; atLeast?: number } | ((sample: JudgedSample) => boolean);
  /** Put this experience library into every prompt, as a Training-Free run does. */
  library?: ExperienceLibrary;
  /** How the library is rendered: template, token budget, token counter. */
  libraryPrompt?: LibraryPromptOptions;
  /** Any other prompt (a system prompt, an arm's instruction): the item's prompt as the policy sees it. */
  prompt?: (item: DatasetItem, index: number) => PromptInput | Promise<PromptInput>;
  /**
   * The temperature an item is sampled at, given `temperature` (a routed evaluation scales it by
   * the arm's); default `temperature` for every item. 0 stays greedy.
   */
  temperatureOf?: (item: DatasetItem, index: number, temperature: number) => number;
  /** Items sampled in one `generateGroups` call (decoded together where the policy batches). Default 8. */
  batchSize?: number;
  onProgress?: (progress: EvaluateProgress) => void;
  signal?: AbortSignal;
}

/**
 * An evaluation's settings, checked: what `evaluate` makes of its options, and what a run's
 * held-out evaluation makes of its stored config (checked when the run started).
 */
export interface EvaluationSettings {
  policy: Policy;
  dataset: readonly DatasetItem[];
  rewards: RewardFunction[];
  /** The rewards' weights, making the combined reward. */
  weights: number[];
  samples: number;
  sampling: { temperature: number; topK: number; topP: number; minP: number; maxNewTokens: number };
  seed: number;
  batchSize: number;
  judge: (sample: JudgedSample) => boolean | null;
  promptFor: (item: DatasetItem, index: number) => Promise<PromptInput>;
  temperatureFor: (item: DatasetItem, index: number) => number;
  onProgress?: (progress: EvaluateProgress) => void;
  signal?: AbortSignal;
}

/** Items sampled in one `generateGroups` call by default. */
export const EVALUATE_BATCH_SIZE = 8;

/** Evaluates `policy` on `dataset`; see `EvaluateOptions`. Bad options reject (a clear `InvalidInputError`). */
export async function evaluate(options: EvaluateOptions): Promise<Evaluation> {
  return evaluateWith(evaluationSettings(options));
}

/** `evaluate`'s options checked into its settings (a clear `InvalidInputError` for each bad one). */
function evaluationSettings(options: EvaluateOptions): EvaluationSettings {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected { policy, dataset, rewards, ... }.');
  validateHandles({ policy: options.policy, rewards: options.rewards });
  const dataset = validateDataset(options.dataset);
  const samples = integer(options.samples, 'samples', 1, 1, 1024);
  const temperature = real(options.temperature, 'temperature', 1, 0, 100);
  if (temperature === 0 && samples > 1) {
    throw new InvalidInputError('samples', `is ${samples}, but greedy decoding (temperature 0) writes the same answer every time; use samples: 1, or a temperature above 0 for pass@k.`);
  }
  return {
    policy: options.policy,
    dataset,
    rewards: options.rewards,
    weights: options.rewards.map((r) => r.weight ?? 1),
    samples,
    sampling: {
      temperature,
      topK: integer(options.topK, 'topK', GROUP_SAMPLING_DEFAULTS.topK, 0),
      topP: real(options.topP, 'topP', GROUP_SAMPLING_DEFAULTS.topP, 0, 1, true),
      minP: real(options.minP, 'minP', GROUP_SAMPLING_DEFAULTS.minP, 0, 1),
      maxNewTokens: integer(options.maxNewTokens, 'maxNewTokens', GROUP_SAMPLING_DEFAULTS.maxNewTokens, 1),
    },
    seed: integer(options.seed, 'seed', 0, 0, 0xffffffff),
    batchSize: integer(options.batchSize, 'batchSize', EVALUATE_BATCH_SIZE, 1),
    judge: correctness(options.correct, options.rewards),
    promptFor: promptMaker(options),
    temperatureFor: itemTemperature(options.temperatureOf, temperature),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

/** Samples, scores and judges every item of `settings.dataset`, a batch at a time. */
export async function evaluateWith(settings: EvaluationSettings): Promise<Evaluation> {
  const { dataset, batchSize, signal } = settings;
  const items: EvaluatedItem[] = [];
  const usage = { promptTokens: 0, completionTokens: 0 };
  for (let start = 0; start < dataset.length; start += batchSize) {
    throwIfAborted(signal);
    const indices = Array.from({ length: Math.min(batchSize, dataset.length - start) }, (_, i) => start + i);
    items.push(...(await evaluateBatch(settings, indices, usage)));
    settings.onProgress?.({ done: items.length, total: dataset.length });
  }
  return { summary: summarise(items, settings.rewards.map((r) => r.name), settings.samples, settings.sampling.temperature, usage), items };
}

/** One batch of items: sampled in one `generateGroups` call, each sample scored and judged; `usage` adds the batch's. */
async function evaluateBatch(settings: EvaluationSettings, indices: number[], usage: EvaluationSummary['usage']): Promise<EvaluatedItem[]> {
  const { dataset, samples, rewards, signal } = settings;
  const prompts = await Promise.all(indices.map((index) => settings.promptFor(dataset[index], index)));
  const requests: GenerateGroupOptions[] = indices.map((index, i) => ({
    ...prompts[i],
    ...settings.sampling,
    temperature: settings.temperatureFor(dataset[index], index),
    groupSize: samples,
    seed: deriveSeed(settings.seed, 'evaluate', index),
    ...(signal ? { signal } : {}),
  }));
  const groups = await generateGroups(settings.policy, requests);
  throwIfAborted(signal);
  const items: EvaluatedItem[] = [];
  for (const [i, index] of indices.entries()) {
    const item = dataset[index];
    const { completions } = groups[i];
    if (completions.length !== samples) throw new WebgrpoError('Generation', `The policy returned ${completions.length} completions for ${samples} samples of item ${index}.`);
    usage.promptTokens += groups[i].usage.promptTokens;
    usage.completionTokens += groups[i].usage.completionTokens;
    const table = await rewardTable(rewards, completions, item, prompts[i], index);
    const combined = combinedRewards(table, settings.weights).map((r) => (Number.isNaN(r) ? null : r));
    const scored: EvaluatedSample[] = completions.map((c, row) => ({
      text: c.text,
      finishReason: c.finishReason,
      rewards: table[row],
      reward: combined[row],
      correct: settings.judge({ text: c.text, item, rewards: byName(rewards, table[row]), reward: combined[row] }),
    }));
    items.push(evaluatedItem(index, item, prompts[i], scored));
  }
  return items;
}

/** An item's prompt: the caller's, the library's, or the item's own. */
function promptMaker(options: EvaluateOptions): (item: DatasetItem, index: number) => Promise<PromptInput> {
  if (options.prompt !== undefined && options.library !== undefined) throw new InvalidInputError('prompt', 'give either prompt or library, not both.');
  if (options.prompt !== undefined) {
    if (typeof options.prompt !== 'function') throw new InvalidInputError('prompt', 'expected a function (item, index) => { prompt } or { messages }.');
    return checkedPrompt(options.prompt);
  }
  if (options.library !== undefined) {
    const library = options.library;
    if (!library || !Array.isArray(library.entries) || !Array.isArray(library.exemplars)) {
      throw new InvalidInputError('library', 'expected an experience library ({ entries, exemplars, ... }), as a Training-Free run returns it.');
    }
    return async (item) => promptWithLibrary(promptOf(item), library, options.libraryPrompt).prompt;
  }
  return async (item) => promptOf(item);
}

/** `make`'s prompts, each checked to be exactly one of `{ prompt }` or `{ messages }`. */
export function checkedPrompt(make: (item: DatasetItem, index: number) => PromptInput | Promise<PromptInput>): (item: DatasetItem, index: number) => Promise<PromptInput> {
  return async (item, index) => {
    const prompt = await make(item, index);
    if (!prompt || typeof prompt !== 'object' || (prompt.prompt === undefined) === (prompt.messages === undefined)) {
      throw new InvalidInputError('prompt', `returned ${JSON.stringify(prompt)} for item ${index}; return exactly one of { prompt } or { messages }.`);
    }
    return prompt;
  };
}

/** Each item's temperature: `temperatureOf`'s, checked, or the evaluation's own (greedy stays greedy). */
export function itemTemperature(temperatureOf: EvaluateOptions['temperatureOf'], temperature: number): (item: DatasetItem, index: number) => number {
  if (temperatureOf === undefined || temperature === 0) return () => temperature;
  if (typeof temperatureOf !== 'function') throw new InvalidInputError('temperatureOf', 'expected a function (item, index, temperature) => number.');
  return (item, index) => real(temperatureOf(item, index, temperature), `temperatureOf(item ${index})`, temperature, 0, 100);
}

/** The verdict of a sample under `rule`: true, false, or null where the rule cannot judge it. */
function correctness(rule: EvaluateOptions['correct'], rewards: RewardFunction[]): (sample: JudgedSample) => boolean | null {
  if (typeof rule === 'function') {
    return (sample) => {
      const verdict = rule(sample);
      if (typeof verdict !== 'boolean') throw new InvalidInputError('correct', `returned ${String(verdict)}; return true or false.`);
      return verdict;
    };
  }
  if (rule === undefined || rule === 'exact') return exactMatch;
  if (typeof rule === 'object' && rule !== null && typeof rule.reward === 'string') {
    const name = rule.reward;
    if (!rewards.some((r) => r.name === name)) throw new InvalidInputError('correct.reward', `"${name}" is not one of the reward functions (${rewards.map((r) => r.name).join(', ')}).`);
    return ruleJudge({ reward: name, atLeast: real(rule.atLeast, 'correct.atLeast', 1, -Number.MAX_VALUE, Number.MAX_VALUE) });
  }
  throw new InvalidInputError('correct', "expected 'exact', { reward, atLeast? } or a function (sample) => boolean.");
}

/** The verdict of a checked rule (a run stores its rule checked). */
export function ruleJudge(rule: CorrectRule): (sample: JudgedSample) => boolean | null {
  if (rule === 'exact') return exactMatch;
  const { reward, atLeast } = rule;
  return (sample) => {
    const score = sample.rewards[reward];
    return score === null ? null : score >= atLeast;
  };
}

/** The `'exact'` rule: the text equals the item's text or number answer, as the `exact` reward compares. */
function exactMatch({ text, item }: JudgedSample): boolean | null {
  const answer = typeof item.answer === 'string' ? item.answer : typeof item.answer === 'number' ? String(item.answer) : null;
  if (answer === null) return null;
  const squash = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();
  return squash(text) === squash(answer);
}

function byName(rewards: RewardFunction[], row: Array<number | null>): Record<string, number | null> {
  return Object.fromEntries(rewards.map((r, k) => [r.name, row[k]]));
}

function evaluatedItem(index: number, item: DatasetItem, prompt: PromptInput, samples: EvaluatedSample[]): EvaluatedItem {
  const rewards = scorable(samples.map((s) => s.reward));
  const verdicts = samples.filter((s) => s.correct !== null);
  return {
    index,
    ...(item.id !== undefined ? { id: item.id } : {}),
    prompt,
    ...(item.answer !== undefined ? { answer: item.answer } : {}),
    samples,
    meanReward: rewards.length ? mean(rewards) : null,
    correct: verdicts.length ? verdicts.filter((s) => s.correct).length : null,
  };
}

function summarise(items: EvaluatedItem[], rewardNames: string[], samples: number, temperature: number, usage: EvaluationSummary['usage']): EvaluationSummary {
  const all = items.flatMap((item) => item.samples);
  const rewards = scorable(all.map((s) => s.reward));
  const verdicts = all.filter((s) => s.correct !== null);
  // pass@k needs the verdict of all n samples of an item.
  const judged = items.filter((item) => item.samples.every((s) => s.correct !== null));
  const passAt: Record<string, number> = {};
  if (judged.length) {
    for (let k = 1; k <= samples; k++) passAt[String(k)] = mean(judged.map((item) => passAtK(samples, item.correct ?? 0, k)));
  }
  return {
    items: items.length,
    samples,
    temperature,
    greedy: temperature === 0,
    rewardNames,
    meanReward: rewards.length ? mean(rewards) : null,
    meanRewards: Object.fromEntries(
      rewardNames.map((name, k) => {
        const column = scorable(all.map((s) => s.rewards[k]));
        return [name, column.length ? mean(column) : null];
      }),
    ),
    accuracy: verdicts.length ? verdicts.filter((s) => s.correct).length / verdicts.length : null,
    passAtK: passAt,
    judged: judged.length,
    usage,
  };
}

function scorable(values: Array<number | null>): number[] {
  return values.filter((v): v is number => v !== null);
}
