/**
 * The end of a step: every group's proposed operations merged into one list by the critic (the
 * paper's batch update), applied to the library under the deterministic batch rules; or, in
 * exemplar mode, the groups' best outputs added. Returns the record `commitStep` stores.
 * `libraryFreeStep` is the record of the loops that keep no library (gradient, router).
 */
import { applyExemplars } from '../../experience/exemplars.js';
import { emptyLibrary, type ApplyResult, type ExemplarCandidate, type ExperienceLibrary, type ExperienceOperation } from '../../experience/types.js';
import type { CriticExchange, ItemResult, RunWarning, StepRecord, TrainingFreeConfig } from '../../store/records.js';
import type { CriticContext } from './critic.js';
import { mergeAndApply } from './critique.js';
import type { StepPlan } from '../../run/schedule.js';
import { stepStats } from '../../run/stats.js';

export async function finishStep(
  ctx: CriticContext & { config: TrainingFreeConfig },
  plan: StepPlan,
  items: ItemResult[],
  library: ExperienceLibrary,
  warn: (warning: RunWarning) => Promise<void>,
): Promise<StepRecord> {
  const { config } = ctx;
  const { step } = plan;
  const warnings: RunWarning[] = [];
  let merge: CriticExchange<ExperienceOperation[]> | undefined;
  let proposed: ExperienceOperation[] = [];
  let outcome: ApplyResult;

  if (config.mode === 'exemplars') {
    const candidates = items.map((item) => item.exemplar).filter((c): c is ExemplarCandidate => c !== undefined);
    outcome = applyExemplars(library, candidates, { step, maxExemplars: config.maxExemplars });
  } else {
    const batch = await mergeAndApply(ctx, items.flatMap((item) => item.groupUpdate?.parsed ?? []), library, step);
    merge = batch.merge;
    proposed = batch.proposed;
    outcome = batch;
    for (const message of batch.notes) warnings.push({ step, stage: 'batch-merge', message });
  }
  for (const warning of warnings) await warn(warning);

  return {
    step,
    epoch: plan.epoch,
    batch: plan.batch,
    items,
    ...(merge ? { merge } : {}),
    proposed,
    applied: outcome.applied,
    skippedOperations: outcome.skipped,
    library: outcome.library,
    stats: stepStats(items),
    warnings,
    committedAt: new Date().toISOString(),
  };
}

/** A committed step of a loop that keeps no library: its groups, their stats, and what the loop learned (`training`, `routing`). */
export function libraryFreeStep(plan: StepPlan, items: ItemResult[], learned: Pick<StepRecord, 'training' | 'routing'>): StepRecord {
  return {
    step: plan.step,
    epoch: plan.epoch,
    batch: plan.batch,
    items,
    proposed: [],
    applied: [],
    skippedOperations: [],
    library: emptyLibrary(),
    stats: stepStats(items),
    warnings: [],
    committedAt: new Date().toISOString(),
    ...learned,
  };
}
