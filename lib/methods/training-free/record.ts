/**
 * The records of a training-free run (`trainingFreeGrpo`: lessons or exemplars): its config, the
 * library it starts from, its step payload, the critic's fields of its item results and
 * rollouts, and their checks as a store or an import reads them.
 */
import { validateLibrary } from '../../experience/normalize.js';
import type { ApplyResult, ExemplarCandidate, ExperienceLibrary, ExperienceOperation } from '../../experience/types.js';
import type { PolicyInfo } from '../../core/policy.js';
import type { LoopConfig, RunRecordOf } from '../../store/records/index.js';
import type { RecordKind } from '../../store/records/kind.js';
import { arr, bool, int, num, obj, oneOf, str, type Obj } from '../../core/shape.js';
import { validateLoopConfig } from '../../store/records/validate.js';

export type LoopMode = 'lessons' | 'exemplars';

/** Prompt templates; `{{name}}` placeholders, all our own wording unless overridden. */
export interface PromptTemplates {
  /** Wraps a task with the library: `{{experiences}}`, `{{prompt}}`. */
  prompt: string;
  /** Critic: one rollout's summary. */
  summary: string;
  /** Critic: the group critique proposing lessons. */
  critique: string;
  /** Critic: the proposed lessons checked against the library, as operations. */
  groupUpdate: string;
  /** Critic: all operations of a batch merged into one consistent list. */
  batchMerge: string;
  /** Critic: asked once when a reply could not be parsed. */
  repair: string;
  /** The critic's system message. */
  criticSystem: string;
}

/** The resolved, serialisable options of a run (what `resume` needs besides the callables). */
export interface TrainingFreeConfig extends Omit<LoopConfig, 'dynamicSampling'> {
  mode: LoopMode;
  concurrency: number;
  criticTemperature: number;
  criticMaxNewTokens: number;
  givenGroundTruth: boolean;
  lessonsPerGroup: number;
  experienceTokenBudget: number;
  /** Experiences shown per prompt, the closest to its task; 0 (or absent, in runs stored before it existed): all that fit. */
  retrieveExperiences?: number;
  maxExperienceLength: number;
  exemplarThreshold: number;
  maxExemplars: number;
  templates: PromptTemplates;
  critic: PolicyInfo;
}

/** One critic exchange: every raw reply (untrusted text, kept for audit) and what was used. */
export interface CriticExchange<T> {
  outputs: string[];
  /** The parsed result; absent when both tries failed (a warning says why). */
  parsed?: T;
}

/** A training-free step's payload: the batch update and the library after it. */
export interface TrainingFreeStepPayload {
  kind: 'training-free';
  /** Lessons mode: the batch merge exchange (absent when no group proposed anything). */
  merge?: CriticExchange<ExperienceOperation[]>;
  /** The operations handed to `applyOperations` (or the exemplar candidates' outcome). */
  proposed: ExperienceOperation[];
  applied: ApplyResult['applied'];
  skippedOperations: ApplyResult['skipped'];
  /** The library after the step (the library before step 1 is the run's `initialLibrary`). */
  library: ExperienceLibrary;
}

declare module '../../store/records/run.js' {
  interface RunKinds {
    'training-free': { config: TrainingFreeConfig; payload: TrainingFreeStepPayload };
  }
  interface RunRecordBase {
    /** The experience library the run starts from (the driver stores an empty one with runs of other kinds). */
    initialLibrary: ExperienceLibrary;
  }
}

export type TrainingFreeRunRecord = RunRecordOf<'training-free'>;

declare module '../../store/records/item.js' {
  interface WarningStages {
    summary: true;
    critique: true;
    'group-update': true;
    'batch-merge': true;
    exemplar: true;
  }
  interface RolloutRecord {
    /** The critic's summary of this rollout (lessons mode, groups with spread). */
    summary?: string;
  }
  interface ItemResult {
    /** Why the critic did not look at this group, when it did not. */
    skipped?: 'zero-spread' | 'no-rewards';
    critique?: CriticExchange<string[]>;
    groupUpdate?: CriticExchange<ExperienceOperation[]>;
    exemplar?: ExemplarCandidate;
  }
}

function validateConfig(value: unknown, at: string): void {
  const c = validateLoopConfig(value, at);
  oneOf(c.mode, ['lessons', 'exemplars'] as const, `${at}.mode`);
  for (const key of ['concurrency', 'criticMaxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  for (const key of ['lessonsPerGroup', 'experienceTokenBudget', 'maxExperienceLength', 'maxExemplars'] as const) int(c[key], `${at}.${key}`);
  if (c.retrieveExperiences !== undefined) int(c.retrieveExperiences, `${at}.retrieveExperiences`);
  for (const key of ['criticTemperature', 'exemplarThreshold'] as const) num(c[key], `${at}.${key}`);
  bool(c.givenGroundTruth, `${at}.givenGroundTruth`);
  const templates = obj(c.templates, `${at}.templates`);
  for (const key of ['prompt', 'summary', 'critique', 'groupUpdate', 'batchMerge', 'repair', 'criticSystem'] as const) {
    str(templates[key], `${at}.templates.${key}`);
  }
  const critic = obj(c.critic, `${at}.critic`);
  str(critic.model, `${at}.critic.model`);
  str(critic.backend, `${at}.critic.backend`);
}

/** A training-free payload: the batch update's lists and a valid library, normalised (a library stored before exemplars gets its empty list). */
function readStep(p: Obj, at: string): Obj {
  for (const key of ['proposed', 'applied', 'skippedOperations'] as const) arr(p[key], `${at}.${key}`);
  return { ...p, library: validateLibrary(p.library, `${at}.library`) };
}

/** How a store checks and reads back a training-free run (`kind: 'training-free'`): its config, its initial library and each step's batch update and library. */
export const TRAINING_FREE_RECORD: RecordKind = {
  kind: 'training-free',
  config: validateConfig,
  // Read as validated: a library stored before exemplars existed gets its empty list.
  runFields: { initialLibrary: { description: 'an experience library', read: validateLibrary } },
  step: readStep,
  read: readStep,
  rollout: (rollout, at) => {
    if (rollout.summary !== undefined) str(rollout.summary, `${at}.summary`);
  },
  // v4 steps were this method's shape: every field is its own.
  fromV4: (fields) => fields,
};
