/**
 * `learnFromGroups`: the training-free loop's critic step, fed by groups told to an ask/tell
 * session instead of the loop's own rollouts. The code around the model owns the rewards (it
 * samples, scores and tells; nothing here calls a reward function); the critic then does exactly what it does inside `trainingFreeGrpo`: a summary per
 * completion, a group critique proposing at most N lessons, a group update against the library,
 * one batch merge of every group's operations, and `applyOperations` under the same batch rules,
 * with the same parsing, repair and skip-with-warning handling of its untrusted replies.
 *
 *   const groups = await session.groups({ told: true });
 *   const { library } = await learnFromGroups({ critic: session.policy, groups, library });
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { normalizeExperienceLibrary } from '../../experience/normalize.js';
import { promptText } from '../../experience/render.js';
import type { AppliedOperation, ExperienceLibrary, ExperienceOperation, SkippedOperation } from '../../experience/types.js';
import type { Policy } from '../../core/policy.js';
import type { GroupRecord } from '../../store/records/session.js';
import type { WarningStage } from '../../store/records/index.js';
import type { CriticExchange, PromptTemplates } from './record.js';
import type { CriticConfig, CriticContext } from './critic.js';
import { critiqueGroup, mergeAndApply } from './critique.js';
import { integer, real } from '../../run/options.js';
import { DEFAULTS, resolveTemplates } from './options.js';
import { groupStats } from '../../run/stats.js';

export interface LearnFromGroupsOptions {
  /** Writes the summaries, critiques and operations (a session's `policy` shares its queue). */
  critic: Policy;
  /** Told groups (`session.groups({ told: true })`), critiqued in this order as one batch. */
  groups: readonly GroupRecord[];
  /** The library to update, in any form `normalizeExperienceLibrary` accepts. Default: empty. */
  library?: unknown;
  /** Step recorded on added and updated entries. Default: one after the library's latest. */
  step?: number;
  /**
   * The reference answer of a group, shown to the critic when ground truth is given. Default: the
   * group's `meta.answer` (tag a group with it when you ask), if any.
   */
  reference?: (group: GroupRecord) => string | undefined;
  /** Show rewards and references to the critic, and skip groups with no reward spread. Default true. */
  givenGroundTruth?: boolean;
  /** Most lessons one group critique may propose. Default 2. */
  lessonsPerGroup?: number;
  /** Default 0. */
  criticTemperature?: number;
  /** Default 512. */
  criticMaxNewTokens?: number;
  /** Longest lesson kept, in characters. Default 400. */
  maxExperienceLength?: number;
  /** Seed of the critic's sampling. Default 0. */
  seed?: number;
  /** Replace any of the critic's templates (the loop's wording by default). */
  templates?: Partial<Omit<PromptTemplates, 'prompt'>>;
  signal?: AbortSignal;
  /** Called after each group's critique. */
  onProgress?: (progress: { groupsDone: number; groups: number }) => void;
}

/** What the critic made of one group. */
export interface LearnedGroup {
  groupId: string;
  /** Why the critic did not look at this group, when it did not. */
  skipped?: 'zero-spread' | 'no-rewards';
  summaries?: string[];
  critique?: CriticExchange<string[]>;
  groupUpdate?: CriticExchange<ExperienceOperation[]>;
}

/** Something skipped or repaired instead of failing (a group's id where it concerns one group). */
export interface LearnWarning {
  stage: WarningStage;
  message: string;
  groupId?: string;
}

export interface LearnResult {
  /** The library after the batch update. */
  library: ExperienceLibrary;
  step: number;
  groups: LearnedGroup[];
  /** The batch merge exchange (absent when no group proposed anything). */
  merge?: CriticExchange<ExperienceOperation[]>;
  /** The operations handed to `applyOperations`. */
  proposed: ExperienceOperation[];
  applied: AppliedOperation[];
  /** Operations that changed nothing, and why. */
  skipped: SkippedOperation[];
  warnings: LearnWarning[];
}

/**
 * Runs the training-free critic step on groups told to an ask/tell session: pass the `critic`
 * policy, the told `groups` and the `library` to update; get the new library and what was applied,
 * skipped and warned about.
 */
export async function learnFromGroups(options: LearnFromGroupsOptions): Promise<LearnResult> {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const { critic, groups, signal } = options;
  if (!critic || typeof critic.generateGroup !== 'function') throw new InvalidInputError('critic', 'expected a Policy (an object with generateGroup).');
  if (!Array.isArray(groups as unknown)) throw new InvalidInputError('groups', 'expected an array of told session groups.');
  groups.forEach((group, i) => {
    if (!group || typeof group !== 'object' || !Array.isArray(group.completions)) {
      throw new InvalidInputError(`groups[${i}]`, 'expected a session group record ({ id, completions, ... }).');
    }
    if (!group.feedback) {
      throw new InvalidInputError(`groups[${i}]`, `group ${group.id} has not been told its rewards; tell it first, or pass session.groups({ told: true }).`);
    }
  });
  const config = resolveCriticConfig(options);
  const library = normalizeExperienceLibrary(options.library, { maxLength: config.maxExperienceLength });
  const step = integer(options.step, 'step', nextStep(library), 1);
  const reference = options.reference ?? metaAnswer;
  const ctx: CriticContext = { critic, config, signal: signal ?? new AbortController().signal };
  throwIfAborted(signal);

  const warnings: LearnWarning[] = [];
  const learned: LearnedGroup[] = [];
  for (const group of groups) {
    const rollouts = group.completions.map((c) => ({ text: c.text, reward: c.reward ?? null }));
    const stats = groupStats(rollouts.map((r) => r.reward));
    const outcome: LearnedGroup = { groupId: group.id };
    learned.push(outcome);
    // As in the loop: nothing to contrast in a group whose rewards do not differ.
    if (config.givenGroundTruth && stats.scorable === 0) outcome.skipped = 'no-rewards';
    else if (config.givenGroundTruth && stats.spread === 0) outcome.skipped = 'zero-spread';
    else {
      const answer = reference(group);
      const critiqued = await critiqueGroup(ctx, { task: promptText(group), ...(answer !== undefined ? { reference: answer } : {}), rollouts }, library, [group.id], {
        warn: async (stage, message) => void warnings.push({ stage, message, groupId: group.id }),
      });
      outcome.summaries = critiqued.summaries;
      outcome.critique = critiqued.critique;
      if (critiqued.groupUpdate) outcome.groupUpdate = critiqued.groupUpdate;
    }
    options.onProgress?.({ groupsDone: learned.length, groups: groups.length });
  }
  throwIfAborted(signal);

  const batch = await mergeAndApply(ctx, learned.flatMap((g) => g.groupUpdate?.parsed ?? []), library, step);
  for (const message of batch.notes) warnings.push({ stage: 'batch-merge', message });
  return {
    library: batch.library,
    step,
    groups: learned,
    ...(batch.merge ? { merge: batch.merge } : {}),
    proposed: batch.proposed,
    applied: batch.applied,
    skipped: batch.skipped,
    warnings,
  };
}

/** The loop's critic defaults and validation, for the options a session's critic step takes. */
function resolveCriticConfig(options: LearnFromGroupsOptions): CriticConfig {
  if ((options.templates as { prompt?: unknown } | undefined)?.prompt !== undefined) {
    throw new InvalidInputError('templates.prompt', 'is not used here: the session asked with its own prompts.');
  }
  const givenGroundTruth = options.givenGroundTruth ?? DEFAULTS.givenGroundTruth;
  if (typeof givenGroundTruth !== 'boolean') throw new InvalidInputError('givenGroundTruth', 'expected true or false.');
  return {
    templates: resolveTemplates('lessons', options.templates),
    criticTemperature: real(options.criticTemperature, 'criticTemperature', DEFAULTS.criticTemperature, 0, 100),
    criticMaxNewTokens: integer(options.criticMaxNewTokens, 'criticMaxNewTokens', DEFAULTS.criticMaxNewTokens, 1),
    seed: integer(options.seed, 'seed', DEFAULTS.seed, 0, 2 ** 32 - 1),
    givenGroundTruth,
    lessonsPerGroup: integer(options.lessonsPerGroup, 'lessonsPerGroup', DEFAULTS.lessonsPerGroup, 1, 100),
    maxExperienceLength: integer(options.maxExperienceLength, 'maxExperienceLength', DEFAULTS.maxExperienceLength, 20),
  };
}

/** The step after the library's latest change (1 for a new library). */
function nextStep(library: ExperienceLibrary): number {
  const steps = [...library.entries, ...library.exemplars].flatMap((e) => [e.createdStep, e.updatedStep]);
  return Math.max(0, ...steps) + 1;
}

function metaAnswer(group: GroupRecord): string | undefined {
  const answer = group.meta?.answer;
  return answer === undefined || answer === null ? undefined : String(answer);
}
