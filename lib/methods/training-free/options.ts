/**
 * Options of `trainingFreeGrpo`, their defaults (the issue's: G = 5, 3 epochs, rollout temperature
 * 0.7, critic temperature 0, ground truth given, 2 lessons per group) and their validation into the
 * serialisable `TrainingFreeConfig` that is stored with the run.
 */
import { InvalidInputError } from '../../errors.js';
import { DEFAULT_EXPERIENCE_TOKEN_BUDGET } from '../../experience/render.js';
import { DEFAULT_MAX_EXPERIENCE_LENGTH } from '../../experience/operations.js';
import { DEFAULT_MAX_EXEMPLARS } from '../../experience/exemplars.js';
import type { EpochHook } from '../../export/epoch.js';
import type { Completion, Policy, PromptInput } from '../../policy/types.js';
import type { DatasetItem, LoopMode, PromptTemplates, TrainingFreeConfig } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { defaultTemplates, REQUIRED_PLACEHOLDERS } from './prompts.js';

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

/** The callables and handles a run needs besides its stored configuration. */
export interface LoopHandles {
  /** Produces the rollouts. */
  policy: Policy;
  /** Writes summaries, critiques and operations. Default: the policy. */
  critic?: Policy;
  /** Reward functions, in the order of the run's reward columns. */
  rewards: RewardFunction[];
  /** Where the run is kept. Default: a new `MemoryStore` (lost with the page). */
  store?: Store;
  /** Cancels within one step; the run stays resumable from its first unfinished item. */
  signal?: AbortSignal;
  /** Token counter for the experience budget. Default: the policy's tokenizer, else an estimate. */
  countTokens?: (text: string) => number;
  /**
   * Called once per finished epoch, after its last step is committed, with every group of that
   * epoch as export groups (`itemResultGroup`): `exportEveryEpoch(jsonlFileSink(path))` appends
   * them as TRL-ready JSONL while training goes on (seed 004). An epoch that finishes after a resume
   * still hands over all its groups, those done before the resume included.
   */
  onEpoch?: EpochHook;
}

/** Sampling settings the gradient and router loops take alike (each documents its own temperature and seed). */
export interface GroupSamplingOptions {
  topK?: number;
  topP?: number;
  minP?: number;
  /** Default 32. */
  maxNewTokens?: number;
  /** Shuffle the dataset each epoch (seeded); default true. */
  shuffle?: boolean;
}

/** Defaults of `GroupSamplingOptions`: no top-k, top-p or min-p filtering, 32 tokens, shuffled. */
export const GROUP_SAMPLING_DEFAULTS = { topK: 0, topP: 1, minP: 0, maxNewTokens: 32, shuffle: true };

export interface TrainingFreeGrpoOptions extends LoopHandles {
  dataset: DatasetItem[];
  /** `lessons` (the paper: a critic writes lessons) or `exemplars` (best outputs as examples). Default `lessons`. */
  mode?: LoopMode;
  /** Completions per item. Default 5. */
  groupSize?: number;
  /** Passes over the dataset. Default 3. */
  epochs?: number;
  /** Items per step; the library is updated once per step. Default 4. */
  batchSize?: number;
  /** Items of a step worked on at once (rollouts and critic calls). Default 1. */
  concurrency?: number;
  /** Rollout temperature. Default 0.7. */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  /** Default 256. */
  maxNewTokens?: number;
  /** Critic temperature. Default 0. */
  criticTemperature?: number;
  /** Default 512. */
  criticMaxNewTokens?: number;
  /** Show rewards and reference answers to the critic, and skip groups with no reward spread. Default true. */
  givenGroundTruth?: boolean;
  /** Most lessons one group critique may propose. Default 2. */
  lessonsPerGroup?: number;
  /** Seed for the epoch order and every sampling call. Default 0. */
  seed?: number;
  /** Shuffle the dataset each epoch (seeded). Default true. */
  shuffle?: boolean;
  /** Starting library, any form `normalizeExperienceLibrary` accepts. */
  initialExperiences?: unknown;
  /** Most tokens the experiences may add to a prompt. Default 512. */
  experienceTokenBudget?: number;
  /** Longest lesson kept, in characters. Default 400. */
  maxExperienceLength?: number;
  /** Exemplar mode: the least reward an exemplar needs. Default 0. */
  exemplarThreshold?: number;
  /** Exemplar mode: most exemplars kept. Default 8. */
  maxExemplars?: number;
  /** Replace any of the prompt templates (our wording by default). */
  templates?: Partial<PromptTemplates>;
  /** Name of the built-in task the dataset came from (recorded with the run). */
  task?: string;
  /** Id of the new run. Default: a random UUID. */
  runId?: string;
}

export const DEFAULTS = {
  mode: 'lessons' as LoopMode,
  groupSize: 5,
  epochs: 3,
  batchSize: 4,
  concurrency: 1,
  temperature: 0.7,
  topK: 0,
  topP: 1,
  minP: 0,
  maxNewTokens: 256,
  criticTemperature: 0,
  criticMaxNewTokens: 512,
  givenGroundTruth: true,
  lessonsPerGroup: 2,
  seed: 0,
  shuffle: true,
  experienceTokenBudget: DEFAULT_EXPERIENCE_TOKEN_BUDGET,
  maxExperienceLength: DEFAULT_MAX_EXPERIENCE_LENGTH,
  exemplarThreshold: 0,
  maxExemplars: DEFAULT_MAX_EXEMPLARS,
};

export function integer(value: number | undefined, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) throw new InvalidInputError(name, `expected an integer from ${min} to ${max}, got ${v}.`);
  return v;
}

export function real(value: number | undefined, name: string, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new InvalidInputError(name, `expected a number from ${min} to ${max}, got ${v}.`);
  return v;
}

export function validateHandles(handles: LoopHandles): void {
  if (!handles.policy || typeof handles.policy.generateGroup !== 'function') {
    throw new InvalidInputError('policy', 'expected a Policy (an object with generateGroup).');
  }
  if (handles.critic !== undefined && typeof handles.critic.generateGroup !== 'function') {
    throw new InvalidInputError('critic', 'expected a Policy (an object with generateGroup).');
  }
  if (handles.onEpoch !== undefined && typeof handles.onEpoch !== 'function') {
    throw new InvalidInputError('onEpoch', 'expected a function (for example exportEveryEpoch(sink)).');
  }
  if (!Array.isArray(handles.rewards) || handles.rewards.length === 0) {
    throw new InvalidInputError('rewards', 'give at least one reward function ({ name, score }).');
  }
  const names = new Set<string>();
  handles.rewards.forEach((reward, i) => {
    if (!reward || typeof reward.name !== 'string' || reward.name === '') throw new InvalidInputError(`rewards[${i}].name`, 'expected a non-empty string.');
    if (typeof reward.score !== 'function') throw new InvalidInputError(`rewards[${i}].score`, 'expected a function.');
    if (names.has(reward.name)) throw new InvalidInputError(`rewards[${i}].name`, `"${reward.name}" is used twice.`);
    names.add(reward.name);
    if (reward.weight !== undefined && !Number.isFinite(reward.weight)) throw new InvalidInputError(`rewards[${i}].weight`, 'expected a finite number.');
  });
}

/** Our templates for `mode` with the caller's replacements, each checked for its placeholders. */
export function resolveTemplates(mode: LoopMode, overrides: Partial<PromptTemplates> | undefined): PromptTemplates {
  const templates: PromptTemplates = { ...defaultTemplates(mode) };
  for (const [key, value] of Object.entries(overrides ?? {}) as Array<[keyof PromptTemplates, unknown]>) {
    if (!(key in REQUIRED_PLACEHOLDERS)) throw new InvalidInputError(`templates.${key}`, 'is not a template name.');
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidInputError(`templates.${key}`, 'expected a string.');
    for (const name of REQUIRED_PLACEHOLDERS[key]) {
      if (!value.includes(`{{${name}}}`)) throw new InvalidInputError(`templates.${key}`, `must contain the placeholder {{${name}}}.`);
    }
    templates[key] = value;
  }
  return templates;
}

/** Validates the options and resolves every default. */
export function resolveConfig(options: TrainingFreeGrpoOptions): TrainingFreeConfig {
  validateHandles(options);
  const mode = options.mode ?? DEFAULTS.mode;
  if (mode !== 'lessons' && mode !== 'exemplars') throw new InvalidInputError('mode', `expected "lessons" or "exemplars", got "${String(mode)}".`);
  const templates = resolveTemplates(mode, options.templates);
  const critic = options.critic ?? options.policy;
  const config: TrainingFreeConfig = {
    mode,
    groupSize: integer(options.groupSize, 'groupSize', DEFAULTS.groupSize, 2, 256),
    epochs: integer(options.epochs, 'epochs', DEFAULTS.epochs, 1, 10_000),
    batchSize: integer(options.batchSize, 'batchSize', DEFAULTS.batchSize, 1),
    concurrency: integer(options.concurrency, 'concurrency', DEFAULTS.concurrency, 1, 256),
    temperature: real(options.temperature, 'temperature', DEFAULTS.temperature, 0, 100),
    topK: integer(options.topK, 'topK', DEFAULTS.topK, 0),
    topP: real(options.topP, 'topP', DEFAULTS.topP, Number.MIN_VALUE, 1),
    minP: real(options.minP, 'minP', DEFAULTS.minP, 0, 1),
    maxNewTokens: integer(options.maxNewTokens, 'maxNewTokens', DEFAULTS.maxNewTokens, 1),
    criticTemperature: real(options.criticTemperature, 'criticTemperature', DEFAULTS.criticTemperature, 0, 100),
    criticMaxNewTokens: integer(options.criticMaxNewTokens, 'criticMaxNewTokens', DEFAULTS.criticMaxNewTokens, 1),
    givenGroundTruth: options.givenGroundTruth ?? DEFAULTS.givenGroundTruth,
    lessonsPerGroup: integer(options.lessonsPerGroup, 'lessonsPerGroup', DEFAULTS.lessonsPerGroup, 1, 100),
    rewards: options.rewards.map((r) => ({ name: r.name, weight: r.weight ?? 1 })),
    seed: integer(options.seed, 'seed', DEFAULTS.seed, 0, 2 ** 32 - 1),
    shuffle: options.shuffle ?? DEFAULTS.shuffle,
    experienceTokenBudget: integer(options.experienceTokenBudget, 'experienceTokenBudget', DEFAULTS.experienceTokenBudget, 0),
    maxExperienceLength: integer(options.maxExperienceLength, 'maxExperienceLength', DEFAULTS.maxExperienceLength, 20),
    exemplarThreshold: real(options.exemplarThreshold, 'exemplarThreshold', DEFAULTS.exemplarThreshold, -Number.MAX_VALUE, Number.MAX_VALUE),
    maxExemplars: integer(options.maxExemplars, 'maxExemplars', DEFAULTS.maxExemplars, 1),
    templates,
    policy: { ...options.policy.info },
    critic: { ...critic.info },
  };
  if (typeof config.givenGroundTruth !== 'boolean') throw new InvalidInputError('givenGroundTruth', 'expected true or false.');
  if (typeof config.shuffle !== 'boolean') throw new InvalidInputError('shuffle', 'expected true or false.');
  if (options.task !== undefined) config.task = options.task;
  return config;
}

/**
 * The reward functions of a resumed run, in the stored column order. The names must be the same
 * as when the run started (their weights come from the stored run).
 */
export function matchRewards(config: Pick<TrainingFreeConfig, 'rewards'>, rewards: RewardFunction[]): RewardFunction[] {
  const byName = new Map(rewards.map((r) => [r.name, r]));
  const stored = config.rewards.map((r) => r.name);
  const missing = stored.filter((name) => !byName.has(name));
  const extra = rewards.map((r) => r.name).filter((name) => !stored.includes(name));
  if (missing.length || extra.length) {
    throw new InvalidInputError(
      'rewards',
      `the run was started with rewards [${stored.join(', ')}]; pass the same functions to resume` +
        (missing.length ? ` (missing: ${missing.join(', ')})` : '') +
        (extra.length ? ` (not in the run: ${extra.join(', ')})` : '') +
        '.',
    );
  }
  return stored.map((name) => byName.get(name) as RewardFunction);
}

/** Run ids double as folder names in the file store: letters, digits, `.`, `_`, `-`. */
export function checkRunId(runId: unknown): string {
  if (typeof runId !== 'string' || !/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(runId)) {
    throw new InvalidInputError('runId', 'use 1 to 128 letters, digits, ".", "_" or "-" (not starting with ".").');
  }
  return runId;
}
