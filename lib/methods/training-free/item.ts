/**
 * One dataset item through one step: the prompt with the current library, a group of rollouts,
 * their rewards and advantages, and then either the critic's work (a summary per rollout, a group
 * critique proposing lessons, a group update against the library) or, in exemplar mode, the
 * group's best output. The result is plain data; the step applies it.
 */
import { selectExemplar } from '../../experience/exemplars.js';
import { promptText, renderExperiences, withExperiences } from '../../experience/render.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import type { Policy } from '../../policy/types.js';
import type { DatasetItem, ItemResult, RunWarning, TrainingFreeConfig, WarningStage } from '../../store/records.js';
import type { CriticContext } from './critic.js';
import { critiqueGroup } from './critique.js';
import type { TrainingFreeEvent } from '../../run/events.js';
import type { RewardFunction } from './options.js';
import { promptOf, rolloutGroup } from '../../run/rollout.js';
import type { StepPlan } from '../../run/schedule.js';

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
  const { config, emit } = ctx;
  const { step, epoch } = plan;
  const ref = { step, epoch, item: index };
  const warnings: RunWarning[] = [];
  const warn = async (stage: WarningStage, message: string) => {
    const warning: RunWarning = { step, item: index, stage, message };
    warnings.push(warning);
    await emit({ type: 'warning', warning });
  };

  // 1. The prompt, with as much of the library as the budget allows.
  const base = promptOf(item);
  const task = promptText(base);
  const rendered = renderExperiences(library, {
    tokenBudget: config.experienceTokenBudget,
    countTokens: ctx.countTokens,
    excludeItem: task,
  });
  const prompt = withExperiences(base, rendered.text, config.templates.prompt);
  await emit({ type: 'item-start', ...ref, position, prompt, experienceIds: rendered.included });

  // 2. A group of rollouts, their rewards, and advantages relative to the group.
  const { rollouts, usage, stats, rewards } = await rolloutGroup(ctx, config, ref, item, prompt);
  const result: ItemResult = {
    step,
    epoch,
    index,
    position,
    prompt,
    experienceIds: rendered.included,
    rollouts,
    usage,
    stats,
    warnings,
  };

  // 4a. Exemplar mode: keep the best attempt if it stands out.
  if (config.mode === 'exemplars') {
    const candidate = selectExemplar(task, rollouts.map((r) => r.text), rewards, { threshold: config.exemplarThreshold });
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

function answerText(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}
