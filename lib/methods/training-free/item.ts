/**
 * One dataset item of a training-free step: its prompt with the current library (`prepareItem`),
 * and, once the driver has scored its group, either the critic's work (a summary per rollout, a
 * group critique proposing lessons, a group update against the library) or, in exemplar mode,
 * the group's best output (`critiqueItem`). The result is plain data; the step applies it.
 */
import { selectExemplar } from '../../experience/exemplars.js';
import { promptText, promptWithLibrary } from '../../experience/render.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import type { ItemResult, RunWarning, WarningStage } from '../../store/records/index.js';
import type { TrainingFreeConfig } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { ItemContext, PreparedItem } from '../../run/method.js';
import { promptOf } from '../../run/rollout.js';
import type { CriticContext } from './critic.js';
import { critiqueGroup } from './critique.js';

/** The item's prompt, with as much of the library as the token budget allows (or the entries closest to it, when the run retrieves). */
export function prepareItem(config: TrainingFreeConfig, library: ExperienceLibrary, countTokens: (text: string) => number, item: DatasetItem): PreparedItem {
  const { prompt, included } = promptWithLibrary(promptOf(item), library, {
    tokenBudget: config.experienceTokenBudget,
    countTokens,
    template: config.templates.prompt,
    retrieve: config.retrieveExperiences ?? 0,
  });
  return { prompt, experienceIds: included, start: { experienceIds: included } };
}

/** What the critic (or the exemplar rule) makes of a scored group, added to `result`. */
export async function critiqueItem(
  critic: CriticContext & { config: TrainingFreeConfig },
  ctx: ItemContext,
  result: ItemResult,
  rewards: number[],
  library: ExperienceLibrary,
): Promise<void> {
  const { config } = critic;
  const { plan, index, item } = ctx;
  const ref = { step: plan.step, epoch: plan.epoch, item: index };
  const task = promptText(promptOf(item));
  const { rollouts, stats } = result;
  const warn = async (stage: WarningStage, message: string) => {
    const warning: RunWarning = { step: plan.step, item: index, stage, message };
    result.warnings.push(warning);
    await ctx.warn(warning);
  };

  // Exemplar mode: keep the best attempt if it stands out.
  if (config.mode === 'exemplars') {
    const candidate = selectExemplar(task, rollouts.map((r) => r.text), rewards, { threshold: config.exemplarThreshold });
    if (candidate) result.exemplar = candidate;
    return;
  }

  // Lessons mode: nothing to contrast in a group whose rewards do not differ.
  if (config.givenGroundTruth && stats.scorable === 0) {
    result.skipped = 'no-rewards';
    return;
  }
  if (config.givenGroundTruth && stats.spread === 0) {
    result.skipped = 'zero-spread';
    return;
  }
  // The critic's work (critique.ts): summaries, a group critique, a group update.
  const reference = item.answer !== undefined ? answerText(item.answer) : undefined;
  const critiqued = await critiqueGroup({ ...critic, signal: ctx.signal }, { task, ...(reference !== undefined ? { reference } : {}), rollouts }, library, [plan.epoch, index], {
    warn,
    emit: (event) => ctx.emit({ ...event, ...ref }),
  });
  critiqued.summaries.forEach((summary, row) => (rollouts[row].summary = summary));
  result.critique = critiqued.critique;
  if (critiqued.groupUpdate) result.groupUpdate = critiqued.groupUpdate;
}

function answerText(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}
