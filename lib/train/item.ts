/**
 * One dataset item through one step: the prompt with the current library, a group of rollouts,
 * their rewards and advantages, and then either the critic's work (a summary per rollout, a group
 * critique proposing lessons, a group update against the library) or, in exemplar mode, the
 * group's best output. The result is plain data; the step applies it.
 */
import { throwIfAborted, WebgrpoError, InvalidInputError } from '../errors.js';
import { computeAdvantages } from '../math/advantages.js';
import { selectExemplar } from '../experience/exemplars.js';
import { promptText, renderExperiences, withExperiences } from '../experience/render.js';
import type { ExperienceLibrary } from '../experience/types.js';
import type { Completion, Policy, PromptInput } from '../policy/types.js';
import type { DatasetItem, ItemResult, RolloutRecord, RunWarning, TrainingFreeConfig, WarningStage } from '../store/records.js';
import type { CriticContext } from './critic.js';
import { critiqueGroup } from './critique.js';
import type { TrainingFreeEvent } from './events.js';
import type { RewardFunction } from './options.js';
import { deriveSeed } from './random.js';
import type { StepPlan } from './schedule.js';
import { groupStats } from './stats.js';

export interface ItemContext extends CriticContext {
  config: TrainingFreeConfig;
  policy: Policy;
  rewards: RewardFunction[];
  countTokens: (text: string) => number;
  emit: (event: TrainingFreeEvent) => Promise<void>;
}

export async function runItem(
  ctx: ItemContext,
  plan: StepPlan,
  position: number,
  index: number,
  item: DatasetItem,
  library: ExperienceLibrary,
): Promise<ItemResult> {
  const { config, policy, signal, emit } = ctx;
  const { step, epoch } = plan;
  const ref = { step, epoch, item: index };
  const warnings: RunWarning[] = [];
  const warn = async (stage: WarningStage, message: string) => {
    const warning: RunWarning = { step, item: index, stage, message };
    warnings.push(warning);
    await emit({ type: 'warning', warning });
  };

  // 1. The prompt, with as much of the library as the budget allows.
  const base: PromptInput = item.prompt !== undefined ? { prompt: item.prompt } : { messages: item.messages };
  const task = promptText(base);
  const rendered = renderExperiences(library, {
    tokenBudget: config.experienceTokenBudget,
    countTokens: ctx.countTokens,
    excludeItem: task,
  });
  const prompt = withExperiences(base, rendered.text, config.templates.prompt);
  await emit({ type: 'item-start', ...ref, position, prompt, experienceIds: rendered.included });

  // 2. A group of rollouts.
  const group = await policy.generateGroup({
    ...prompt,
    groupSize: config.groupSize,
    maxNewTokens: config.maxNewTokens,
    temperature: config.temperature,
    topK: config.topK,
    topP: config.topP,
    minP: config.minP,
    seed: deriveSeed(config.seed, 'rollout', epoch, index),
    signal,
  });
  throwIfAborted(signal);
  if (group.completions.length !== config.groupSize) {
    throw new WebgrpoError('Generation', `The policy returned ${group.completions.length} completions for a group of ${config.groupSize}.`);
  }
  await emit({ type: 'rollouts', ...ref, completions: group.completions, usage: group.usage });

  // 3. Rewards, and advantages relative to the group.
  const table = await rewardTable(ctx.rewards, group.completions, item, prompt, index);
  const weights = config.rewards.map((r) => r.weight);
  const advantage = computeAdvantages(table, { groupSize: config.groupSize, weights });
  const combined = advantage.rewards.map((r) => (Number.isNaN(r) ? null : r));
  await emit({ type: 'rewards', ...ref, rewards: table, combined });
  const stats = groupStats(combined);
  await emit({ type: 'advantages', ...ref, advantages: advantage.advantages, stats, zeroSpread: stats.spread === 0 });

  const rollouts: RolloutRecord[] = group.completions.map((c, row) => ({
    text: c.text,
    tokenIds: [...c.tokenIds],
    logprobs: [...c.logprobs],
    finishReason: c.finishReason,
    rewards: table[row],
    reward: combined[row],
    advantage: advantage.advantages[row],
  }));
  const result: ItemResult = {
    step,
    epoch,
    index,
    position,
    prompt,
    experienceIds: rendered.included,
    rollouts,
    usage: group.usage,
    stats,
    warnings,
  };

  // 4a. Exemplar mode: keep the best attempt if it stands out.
  if (config.mode === 'exemplars') {
    const candidate = selectExemplar(task, rollouts.map((r) => r.text), advantage.rewards, { threshold: config.exemplarThreshold });
    if (candidate) result.exemplar = candidate;
    return result;
  }

  // 4b. Lessons mode: nothing to contrast in a group whose rewards do not differ.
  if (config.givenGroundTruth && stats.scorable === 0) {
    result.skipped = 'no-rewards';
    return result;
  }
  if (config.givenGroundTruth && stats.spread === 0) {
    result.skipped = 'zero-spread';
    return result;
  }
  // The critic's work (critique.ts): summaries, a group critique, a group update.
  const reference = item.answer !== undefined ? answerText(item.answer) : undefined;
  const critiqued = await critiqueGroup(ctx, { task, ...(reference !== undefined ? { reference } : {}), rollouts }, library, [epoch, index], {
    warn,
    emit: (event) => emit({ ...event, ...ref }),
  });
  critiqued.summaries.forEach((summary, row) => (rollouts[row].summary = summary));
  result.critique = critiqued.critique;
  if (critiqued.groupUpdate) result.groupUpdate = critiqued.groupUpdate;
  return result;
}

/** Every reward function on every completion of a group: one row of K (finite or null) per completion. */
export async function rewardTable(
  rewards: RewardFunction[],
  completions: Completion[],
  item: DatasetItem,
  prompt: PromptInput,
  index: number,
): Promise<Array<Array<number | null>>> {
  const table: Array<Array<number | null>> = [];
  for (const [row, completion] of completions.entries()) {
    const values: Array<number | null> = [];
    for (const reward of rewards) {
      const value = await reward.score({ text: completion.text, completion, item, prompt, row });
      if (value !== null && (typeof value !== 'number' || !Number.isFinite(value))) {
        throw new InvalidInputError(
          `rewards.${reward.name}`,
          `returned ${String(value)} for item ${index}, completion ${row}; return a finite number, or null when it cannot score.`,
        );
      }
      values.push(value);
    }
    table.push(values);
  }
  return table;
}

function answerText(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}
