/**
 * A run's held-out evaluation: the `evaluation` option resolved into the run's stored config, the
 * epochs it is due after, and one evaluation of the policy as the run stands (`evaluate`). The
 * draws come from the evaluation's own seed, never from the training stream, so a run evaluates
 * without changing what it trains on; every evaluation uses the same per-item seeds, so the
 * epochs' results differ by the training alone.
 */
import { InvalidInputError } from '../errors.js';
import type { Policy, PromptInput } from '../core/policy.js';
import type { CorrectRule, EvaluationConfig, EvaluationRecord } from '../store/records/index.js';
import type { DatasetItem } from '../core/dataset.js';
import { validateDataset } from '../core/dataset.js';
import { checkedPrompt, EVALUATE_BATCH_SIZE, evaluateWith, itemTemperature, ruleJudge } from './evaluate.js';
import { integer, real } from './options.js';
import type { RewardFunction } from '../core/reward.js';
import { deriveSeed } from './random.js';
import { promptOf } from './rollout.js';

/** The held-out split a run evaluates on, and how (every method's start options take it). */
export interface LoopEvaluationOptions {
  /** Held-out items, never trained on (for a built-in task: its dataset under another seed). */
  dataset: DatasetItem[];
  /** Evaluate after every `every`-th epoch (and after the last one). Default 1. Epoch 0, before training, always. */
  every?: number;
  /** Samples per item (pass@k for k up to this). Default 1. */
  samples?: number;
  /** Default the run's temperature; 0 is greedy (one sample per item). */
  temperature?: number;
  /** Default the run's. */
  maxNewTokens?: number;
  /** Seed of the evaluation's draws. Default derived from the run's seed. */
  seed?: number;
  /** `'exact'` (the default: the answer, whitespace and case aside) or `{ reward, atLeast? }` (default 1). */
  correct?: CorrectRule | { reward: string; atLeast?: number };
  /** Also decode every item greedily, kept as the record's `greedyPass` (the temperature's and greedy's accuracy side by side). Default false. */
  alsoGreedy?: boolean;
}

/** The start option every method takes for a held-out evaluation. */
export interface EvaluationOption {
  evaluation?: LoopEvaluationOptions;
}

interface RunSampling {
  temperature: number;
  maxNewTokens: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  rewards: ReadonlyArray<{ name: string; weight: number }>;
}

/** The stored form of `options` for a run of `config` (undefined: the run evaluates nothing). */
export function resolveEvaluation(options: LoopEvaluationOptions | undefined, config: RunSampling): EvaluationConfig | undefined {
  if (options === undefined) return undefined;
  if (!options || typeof options !== 'object') throw new InvalidInputError('evaluation', 'expected { dataset, every?, samples?, temperature?, ... }.');
  const items = validateDataset(options.dataset, 'evaluation.dataset');
  const samples = integer(options.samples, 'evaluation.samples', 1, 1, 1024);
  const temperature = real(options.temperature, 'evaluation.temperature', config.temperature, 0, 100);
  if (temperature === 0 && samples > 1) {
    throw new InvalidInputError('evaluation.samples', `is ${samples}, but greedy decoding (temperature 0) writes the same answer every time; use samples: 1.`);
  }
  if (options.alsoGreedy !== undefined && typeof options.alsoGreedy !== 'boolean') throw new InvalidInputError('evaluation.alsoGreedy', 'expected true or false.');
  if (options.alsoGreedy && temperature === 0) throw new InvalidInputError('evaluation.alsoGreedy', 'is true, but the evaluation is greedy already (temperature 0).');
  return {
    ...(options.alsoGreedy ? { alsoGreedy: true } : {}),
    items,
    every: integer(options.every, 'evaluation.every', 1, 1),
    samples,
    temperature,
    maxNewTokens: integer(options.maxNewTokens, 'evaluation.maxNewTokens', config.maxNewTokens, 1),
    seed: integer(options.seed, 'evaluation.seed', deriveSeed(config.seed, 'evaluation'), 0, 0xffffffff),
    correct: correctRule(options.correct, config.rewards),
  };
}

function correctRule(rule: LoopEvaluationOptions['correct'], rewards: ReadonlyArray<{ name: string }>): CorrectRule {
  if (rule === undefined || rule === 'exact') return 'exact';
  if (!rule || typeof rule !== 'object' || typeof rule.reward !== 'string') {
    throw new InvalidInputError('evaluation.correct', "expected 'exact' or { reward, atLeast? } (a run stores it, so no function).");
  }
  if (!rewards.some((r) => r.name === rule.reward)) {
    throw new InvalidInputError('evaluation.correct.reward', `"${rule.reward}" is not one of the run's rewards (${rewards.map((r) => r.name).join(', ')}).`);
  }
  return { reward: rule.reward, atLeast: real(rule.atLeast, 'evaluation.correct.atLeast', 1, -Number.MAX_VALUE, Number.MAX_VALUE) };
}

/** Whether the run evaluates after `epoch` of `epochs` (0: before the first step). */
export function evaluationDue(evaluation: EvaluationConfig, epoch: number, epochs: number): boolean {
  return epoch === 0 || epoch === epochs || epoch % evaluation.every === 0;
}

/** What one evaluation of a run needs: the policy as it stands and the prompts as the method makes them. */
export interface HeldOutContext {
  policy: Policy;
  rewards: RewardFunction[];
  config: RunSampling & { evaluation: EvaluationConfig };
  prompt?: (item: DatasetItem) => Promise<PromptInput>;
  /** An item's temperature given the evaluation's (the router's arm scales it). */
  temperature?: (item: DatasetItem, temperature: number) => number;
  signal: AbortSignal;
}

/**
 * Evaluates the run's policy on its held-out split after `epoch`, with `step` steps committed:
 * with the settings resolved when the run started (its stored config), checked no second time.
 */
export async function evaluateHeldOut(ctx: HeldOutContext, epoch: number, step: number): Promise<EvaluationRecord> {
  const { config } = ctx;
  const { evaluation } = config;
  const pass = (temperature: number, samples: number) => evaluateWith({
    policy: ctx.policy,
    dataset: evaluation.items,
    rewards: ctx.rewards,
    // The run's stored weights, as its advantages use them.
    weights: config.rewards.map((r) => r.weight),
    samples,
    sampling: { temperature, topK: config.topK, topP: config.topP, minP: config.minP, maxNewTokens: evaluation.maxNewTokens },
    seed: evaluation.seed,
    batchSize: EVALUATE_BATCH_SIZE,
    judge: ruleJudge(evaluation.correct),
    promptFor: ctx.prompt ? checkedPrompt(ctx.prompt) : async (item) => promptOf(item),
    temperatureFor: itemTemperature(ctx.temperature ? (item, _index, t) => ctx.temperature!(item, t) : undefined, temperature),
    signal: ctx.signal,
  });
  const evaluated = await pass(evaluation.temperature, evaluation.samples);
  const greedyPass = evaluation.alsoGreedy ? { greedyPass: await pass(0, 1) } : {};
  return { epoch, step, evaluatedAt: new Date().toISOString(), ...evaluated, ...greedyPass };
}
