/**
 * The end of a step: every group's proposed operations merged into one list by the critic (the
 * paper's batch update), applied to the library under the deterministic batch rules; or, in
 * exemplar mode, the groups' best outputs added. Returns the record `commitStep` stores.
 */
import { applyExemplars } from '../experience/exemplars.js';
import { applyOperations } from '../experience/operations.js';
import { fillTemplate, formatLesson } from '../experience/render.js';
import type { ApplyResult, ExemplarCandidate, ExperienceLibrary, ExperienceOperation } from '../experience/types.js';
import type { CriticExchange, ItemResult, RunWarning, StepRecord } from '../store/records.js';
import { askStructured, type CriticContext } from './critic.js';
import { parseOperations } from './parse.js';
import type { StepPlan } from './schedule.js';
import { stepStats } from './stats.js';

export async function finishStep(
  ctx: CriticContext,
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
    const fromGroups = items.flatMap((item) => item.groupUpdate?.parsed ?? []).filter((op) => op.operation !== 'NONE');
    if (fromGroups.length > 0) {
      const experiences = library.entries.length ? library.entries.map(formatLesson).join('\n') : '(empty)';
      const reply = await askStructured(
        ctx,
        fillTemplate(config.templates.batchMerge, { experiences, operations: JSON.stringify(fromGroups, null, 2) }),
        ['batch-merge', step],
        parseOperations,
        'a JSON array of operations inside <operations></operations> tags',
      );
      merge = reply.exchange;
      for (const note of reply.notes ?? []) warnings.push({ step, stage: 'batch-merge', message: note });
      if (reply.exchange.parsed) {
        proposed = reply.exchange.parsed;
      } else {
        // The groups' own operations are valid already; applying them is better than losing the step's lessons.
        warnings.push({ step, stage: 'batch-merge', message: `Batch merge skipped (${reply.problem}); the groups' operations were applied as proposed.` });
        proposed = fromGroups;
      }
    }
    outcome = applyOperations(library, proposed, { step, maxLength: config.maxExperienceLength });
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
