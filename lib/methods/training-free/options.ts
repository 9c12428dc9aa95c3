/**
 * Options of `trainingFreeGrpo`, their defaults (those of the Training-Free GRPO paper's
 * experiments: G = 5, 3 epochs, rollout temperature 0.7, critic temperature 0, ground truth given,
 * 2 lessons per group) and their validation into the serialisable `TrainingFreeConfig` that is
 * stored with the run.
 */
import { InvalidInputError } from '../../errors.js';
import { DEFAULT_EXPERIENCE_TOKEN_BUDGET } from '../../experience/render.js';
import { DEFAULT_MAX_EXPERIENCE_LENGTH } from '../../experience/operations.js';
import { DEFAULT_MAX_EXEMPLARS } from '../../experience/exemplars.js';
import type { Policy } from '../../core/policy.js';
import type { LoopMode, PromptTemplates, TrainingFreeConfig } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import { integer, real, validateHandles, type LoopHandles } from '../../run/options.js';
import { checkBudgetFits } from './context.js';
import { defaultTemplates, REQUIRED_PLACEHOLDERS } from './prompts.js';
import type { EvaluationOption } from '../../run/held-out.js';

/** A training-free run's handles: the common ones, the critic and the token counter. */
export interface TrainingFreeHandles extends LoopHandles {
  /** Writes summaries, critiques and operations. Default: the policy. */
  critic?: Policy;
  /** Token counter for the experience budget. Default: the policy's tokenizer, else an estimate. */
  countTokens?: (text: string) => number;
}

/** The common checks and the critic's. */
export function validateTrainingFreeHandles(handles: TrainingFreeHandles): void {
  validateHandles(handles);
  if (handles.critic !== undefined && typeof handles.critic.generateGroup !== 'function') {
    throw new InvalidInputError('critic', 'expected a Policy (an object with generateGroup).');
  }
}

export interface TrainingFreeGrpoOptions extends TrainingFreeHandles, EvaluationOption {
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
  /**
   * Show each prompt only this many experiences, those closest to its task (shared words and word
   * pairs, the rarer counting more: a lesson by its text, an exemplar by its task), as retrieval of
   * in-context examples does; for a small model that copies what it sees rather than picking the
   * entry that fits. Default 0: every experience that fits `experienceTokenBudget`, as the paper does.
   */
  retrieveExperiences?: number;
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

/** The values `trainingFreeGrpo` uses for options left out (mode, group size, epochs, sampling, critic settings, ...); exported as `TRAINING_FREE_DEFAULTS`. */
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
  retrieveExperiences: 0,
  maxExperienceLength: DEFAULT_MAX_EXPERIENCE_LENGTH,
  exemplarThreshold: 0,
  maxExemplars: DEFAULT_MAX_EXEMPLARS,
};

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
  validateTrainingFreeHandles(options);
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
    retrieveExperiences: integer(options.retrieveExperiences, 'retrieveExperiences', DEFAULTS.retrieveExperiences, 0),
    maxExperienceLength: integer(options.maxExperienceLength, 'maxExperienceLength', DEFAULTS.maxExperienceLength, 20),
    exemplarThreshold: real(options.exemplarThreshold, 'exemplarThreshold', DEFAULTS.exemplarThreshold, -Number.MAX_VALUE, Number.MAX_VALUE),
    maxExemplars: integer(options.maxExemplars, 'maxExemplars', DEFAULTS.maxExemplars, 1),
    templates,
    policy: { ...options.policy.info },
    critic: { ...critic.info },
  };
  checkBudgetFits(config, options.policy.info.maxPositions);
  if (typeof config.givenGroundTruth !== 'boolean') throw new InvalidInputError('givenGroundTruth', 'expected true or false.');
  if (typeof config.shuffle !== 'boolean') throw new InvalidInputError('shuffle', 'expected true or false.');
  if (options.task !== undefined) config.task = options.task;
  return config;
}

