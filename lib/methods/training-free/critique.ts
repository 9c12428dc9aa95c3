/**
 * The critic's part of Training-Free GRPO, apart from where the groups came from (the loop's own
 * rollouts, or groups told to an ask/tell session):
 *
 *  - `critiqueGroup`: one summary per rollout, a group critique that contrasts the better and worse
 *    attempts and proposes at most N lessons, and a group update that turns them into operations
 *    against the library;
 *  - `mergeAndApply`: the batch update: every group's operations merged into one list by the critic,
 *    then applied to the library under the deterministic batch rules.
 *
 * Critic replies are untrusted: structured replies are parsed, repaired once, and otherwise skipped
 * with a warning, so the library never receives a malformed entry.
 */
import { criticLessonsSchema, criticOperationsSchema } from '../../experience/critic-schema.js';
import { applyOperations, cleanContent } from '../../experience/operations.js';
import { formatLesson } from '../../experience/render.js';
import type { ApplyResult, ExperienceLibrary, ExperienceOperation } from '../../experience/types.js';
import type { WarningStage } from '../../store/records/index.js';
import type { CriticExchange } from './record.js';
import { criticBudget, type PromptField } from './budget.js';
import { askStructured, criticMessages, criticPrompt, criticReply, refusal, type AnswerSchema, type CriticContext } from './critic.js';
import { parseLessons, parseOperations } from './parse.js';

/** Longest summary kept (summaries are fed back into the critique prompt). */
const MAX_SUMMARY = 1500;

/** One group as the critic reads it. */
export interface CritiqueInput {
  /** The task text (the prompt, or the last user message), without the library's experiences. */
  task: string;
  /** The reference answer, shown when ground truth is given. */
  reference?: string;
  /** The group's attempts with their combined rewards (null: could not be scored). */
  rollouts: ReadonlyArray<{ text: string; reward: number | null }>;
}

export interface GroupCritique {
  /** One per rollout: the critic's summary, or the rollout's own text where none came back. */
  summaries: string[];
  critique: CriticExchange<string[]>;
  /** Absent when the critique proposed no lesson. */
  groupUpdate?: CriticExchange<ExperienceOperation[]>;
}

/** Progress of one critique, in order, for a caller that reports it (the loop's events). */
export type CritiqueEvent =
  | { type: 'summaries'; summaries: string[] }
  | { type: 'critique'; exchange: CriticExchange<string[]> }
  | { type: 'group-update'; exchange: CriticExchange<ExperienceOperation[]> };

export interface CritiqueHooks {
  /** Something was skipped or repaired instead of failing. */
  warn(stage: WarningStage, message: string): Promise<void>;
  emit?(event: CritiqueEvent): Promise<void>;
}

/**
 * Summaries, critique and group update of one group. `key` names the group in the critic's seeds
 * (the loop uses `[epoch, dataset index]`), so the same group gets the same critic samples.
 */
export async function critiqueGroup(
  ctx: CriticContext,
  group: CritiqueInput,
  library: ExperienceLibrary,
  key: ReadonlyArray<string | number>,
  hooks: CritiqueHooks,
): Promise<GroupCritique> {
  const emit = hooks.emit ?? (async () => undefined);
  const shown = groupView(ctx, group);
  const summaries = await summarise(ctx, shown, key, hooks.warn);
  await emit({ type: 'summaries', summaries: [...summaries] });
  const asked = { experiences: listing(library, '(none yet)'), replyTokens: criticBudget(ctx.critic, ctx.config.criticMaxNewTokens).maxNewTokens, key, warn: hooks.warn };
  const { critique, lessons } = await proposeLessons(ctx, shown, summaries, asked);
  await emit({ type: 'critique', exchange: critique });
  if (lessons.length === 0) return { summaries, critique };
  const groupUpdate = await lessonOperations(ctx, library, lessons, asked);
  await emit({ type: 'group-update', exchange: groupUpdate });
  return { summaries, critique, groupUpdate };
}

/** A group as the critic's prompts show it: the task, the reference and each reward only where ground truth is given. */
interface GroupView {
  task: string;
  reference: string;
  rollouts: CritiqueInput['rollouts'];
  reward(value: number | null): string;
}

/** What the critique and the group update ask with: the library's listing, the reply's token budget, the group's seed key. */
interface Asked {
  experiences: PromptField;
  replyTokens: number;
  key: ReadonlyArray<string | number>;
  warn: CritiqueHooks['warn'];
}

function groupView({ config }: CriticContext, group: CritiqueInput): GroupView {
  const given = config.givenGroundTruth;
  return {
    task: group.task,
    rollouts: group.rollouts,
    reference: given && group.reference !== undefined ? group.reference : '(not given)',
    reward: (r) => (!given ? '(not given)' : r === null ? '(could not be scored)' : formatNumber(r)),
  };
}

/** One summary per rollout; where the critic gives none (or refuses), the rollout's own text stands in, with a warning. */
async function summarise(ctx: CriticContext, shown: GroupView, key: ReadonlyArray<string | number>, warn: CritiqueHooks['warn']): Promise<string[]> {
  const { config } = ctx;
  const summaries: string[] = [];
  for (const [row, rollout] of shown.rollouts.entries()) {
    let summary = '';
    try {
      const prompt = await criticPrompt(ctx, {
        template: config.templates.summary,
        fields: { task: shown.task, reference: shown.reference, reward: shown.reward(rollout.reward), attempt: rollout.text },
        cut: ['attempt', 'reference', 'task'],
      });
      summary = (await criticReply(ctx, criticMessages(config, prompt), ['summary', ...key, row])).trim();
      if (summary === '') await warn('summary', `The critic gave no summary for attempt ${row + 1}; its raw text stands in.`);
    } catch (error) {
      const problem = refusal(error);
      if (problem === undefined) throw error;
      await warn('summary', `No summary for attempt ${row + 1}: ${problem}; its raw text stands in.`);
    }
    summaries.push((summary || rollout.text).slice(0, MAX_SUMMARY));
  }
  return summaries;
}

/** The group critique: what separates the better attempts from the worse, as at most N lessons (cleaned, the rest cut with a warning). */
async function proposeLessons(ctx: CriticContext, shown: GroupView, summaries: string[], asked: Asked): Promise<{ critique: CriticExchange<string[]>; lessons: string[] }> {
  const { config } = ctx;
  const attempts: PromptField = {
    items: summaries,
    join: (texts) => texts.map((summary, row) => `Attempt ${row + 1} (reward ${shown.reward(shown.rollouts[row].reward)}):\n${summary}`).join('\n\n'),
  };
  const critique = await askStructured(
    ctx,
    {
      template: config.templates.critique,
      fields: { task: shown.task, reference: shown.reference, attempts, experiences: asked.experiences, max_lessons: String(config.lessonsPerGroup) },
      cut: ['attempts', 'experiences', 'reference', 'task'],
    },
    ['critique', ...asked.key],
    parseLessons,
    'the lessons as a JSON array of strings inside <lessons></lessons> tags',
    {
      shape: '{"lessons": ["...", ...]}',
      schema: criticLessonsSchema({
        maxLessons: config.lessonsPerGroup,
        // A critiqued group's rewards differ (with ground truth), so there is a difference to name;
        // whether the lesson is new is the group update's call (NONE).
        minLessons: config.givenGroundTruth ? 1 : 0,
        maxLength: itemLength(asked.replyTokens, config.lessonsPerGroup, LESSONS_JSON, LESSON_JSON, config.maxExperienceLength),
      }),
    },
  );
  if (critique.problem) await asked.warn('critique', `Critique skipped: ${critique.problem}`);
  let lessons = (critique.exchange.parsed ?? []).map((l) => cleanContent(l, config.maxExperienceLength).text).filter((l) => l !== '');
  if (lessons.length > config.lessonsPerGroup) {
    await asked.warn('critique', `The critique proposed ${lessons.length} lessons; only the first ${config.lessonsPerGroup} are kept.`);
    lessons = lessons.slice(0, config.lessonsPerGroup);
  }
  if (critique.exchange.parsed) critique.exchange.parsed = lessons;
  return { critique: critique.exchange, lessons };
}

/** The group update: the lessons checked against the library, as one operation per lesson. */
async function lessonOperations(ctx: CriticContext, library: ExperienceLibrary, lessons: string[], asked: Asked): Promise<CriticExchange<ExperienceOperation[]>> {
  const { config } = ctx;
  const update = await askStructured(
    ctx,
    {
      template: config.templates.groupUpdate,
      fields: { experiences: asked.experiences, lessons: { items: lessons, join: (shown) => shown.map((l, i) => `${i + 1}. ${l}`).join('\n') } },
      cut: ['experiences', 'lessons'],
    },
    ['group-update', ...asked.key],
    parseOperations,
    'a JSON array of operations inside <operations></operations> tags',
    // One operation per proposed lesson, as the prompt asks.
    operationsAnswer(library, { replyTokens: asked.replyTokens, maxLength: config.maxExperienceLength, count: [lessons.length, lessons.length], none: true }),
  );
  if (update.problem) await asked.warn('group-update', `Group update skipped: ${update.problem}`);
  for (const note of update.notes ?? []) await asked.warn('group-update', note);
  return update.exchange;
}

export interface BatchUpdate extends ApplyResult {
  /** The batch merge exchange (absent when no group proposed anything). */
  merge?: CriticExchange<ExperienceOperation[]>;
  /** The operations handed to `applyOperations`. */
  proposed: ExperienceOperation[];
  /** Batch-merge warnings (parts of the reply dropped, or the merge skipped). */
  notes: string[];
}

/**
 * The paper's batch update: the groups' operations (NONE left out) merged into one consistent list
 * by the critic, then applied at `step`. If the merge reply is unusable the groups' operations,
 * valid already, are applied as proposed rather than losing the batch's lessons.
 */
export async function mergeAndApply(
  ctx: CriticContext,
  groupOperations: readonly ExperienceOperation[],
  library: ExperienceLibrary,
  step: number,
): Promise<BatchUpdate> {
  const { config } = ctx;
  const fromGroups = groupOperations.filter((op) => op.operation !== 'NONE');
  const notes: string[] = [];
  let merge: CriticExchange<ExperienceOperation[]> | undefined;
  let proposed: ExperienceOperation[] = [];
  if (fromGroups.length > 0) {
    const reply = await askStructured(
      ctx,
      {
        template: config.templates.batchMerge,
        fields: { experiences: listing(library, '(empty)'), operations: { items: fromGroups.map((op) => JSON.stringify(op)), join: (shown) => `[\n  ${shown.join(',\n  ')}\n]` } },
        cut: ['experiences', 'operations'],
      },
      ['batch-merge', step],
      parseOperations,
      'a JSON array of operations inside <operations></operations> tags',
      // The merge keeps at least one of the proposed edits and leaves out NONE, as the prompt asks.
      operationsAnswer(library, {
        replyTokens: criticBudget(ctx.critic, config.criticMaxNewTokens).maxNewTokens,
        maxLength: config.maxExperienceLength,
        count: [1, Math.min(fromGroups.length, MAX_MERGED)],
        none: false,
      }),
    );
    merge = reply.exchange;
    notes.push(...(reply.notes ?? []));
    if (reply.exchange.parsed) {
      proposed = reply.exchange.parsed;
    } else {
      notes.push(`Batch merge skipped (${reply.problem}); the groups' operations were applied as proposed.`);
      proposed = fromGroups;
    }
  }
  const outcome = applyOperations(library, proposed, { step, maxLength: config.maxExperienceLength });
  return { ...(merge ? { merge } : {}), proposed, ...outcome, notes };
}

/** Most operations one batch merge may answer. */
const MAX_MERGED = 16;
/** Characters of a lessons answer around its items (`{"lessons":[]}`), and per item (quotes, comma). */
const LESSONS_JSON = 14;
const LESSON_JSON = 3;
/** ... of an operations answer (`{"operations":[]}`), and per operation besides its id and content (an UPDATE's). */
const OPERATIONS_JSON = 17;
const OPERATION_JSON = 44;

/**
 * The longest lesson text for which `items` of them, with their JSON, fit a reply of `tokens`
 * (an ASCII character per token, no whitespace between JSON tokens), at least 20 characters and
 * at most `maxLength`. Any longer answer (whitespace, multi-token characters) is still closed in
 * time: the engine keeps only tokens after which the answer can complete in the tokens left.
 */
function itemLength(tokens: number, items: number, fixed: number, perItem: number, maxLength: number): number {
  return Math.max(20, Math.min(maxLength, Math.floor((tokens - fixed) / Math.max(1, items)) - perItem));
}

/** The library's entries, one per line (each cut alike when the prompt must be shorter). */
function listing(library: ExperienceLibrary, empty: string): PromptField {
  return library.entries.length ? { items: library.entries.map(formatLesson), join: (shown) => shown.join('\n') } : empty;
}

interface OperationsBounds {
  replyTokens: number;
  maxLength: number;
  /** Fewest and most operations. */
  count: [number, number];
  none: boolean;
}

/** The operations answer, UPDATE and DELETE limited to the library's ids. */
function operationsAnswer(library: ExperienceLibrary, bounds: OperationsBounds): AnswerSchema {
  const ids = library.entries.map((e) => e.id);
  const [minOperations, maxOperations] = bounds.count;
  const idLength = Math.max(0, ...ids.map((id) => id.length));
  return {
    shape: `{"operations": [{"operation": "ADD", "content": "..."} | {"operation": "UPDATE", "id": "G1", "content": "..."} | {"operation": "DELETE", "id": "G1"}${bounds.none ? ' | {"operation": "NONE"}' : ''}]}`,
    schema: criticOperationsSchema({
      ids,
      minOperations,
      maxOperations,
      none: bounds.none,
      maxLength: itemLength(bounds.replyTokens, maxOperations, OPERATIONS_JSON, OPERATION_JSON + idLength, bounds.maxLength),
    }),
  };
}

/** Rewards as the critic reads them: at most four decimals, no float noise. */
function formatNumber(value: number): string {
  return String(Number(value.toFixed(4)));
}
