/**
 * The end of a training-free step: every group's proposed operations merged into one list by the
 * critic (the paper's batch update), applied to the library under the deterministic batch rules;
 * or, in exemplar mode, the groups' best outputs added. Returns the step's payload (operations and
 * the library after them) and the `operations` event the driver emits after the commit.
 */
import { applyExemplars } from '../../experience/exemplars.js';
import type { ApplyResult, ExemplarCandidate, ExperienceLibrary, ExperienceOperation } from '../../experience/types.js';
import type { ItemResult, RunWarning } from '../../store/records/index.js';
import type { CriticExchange, TrainingFreeConfig, TrainingFreeStepPayload } from './record.js';
import type { StepOutcome } from '../../run/method.js';
import type { StepPlan } from '../../run/schedule.js';
import type { CriticContext } from './critic.js';
import { mergeAndApply } from './critique.js';

export async function finishStep(
  ctx: CriticContext & { config: TrainingFreeConfig },
  plan: StepPlan,
  items: ItemResult[],
  library: ExperienceLibrary,
  warn: (warning: RunWarning) => Promise<void>,
): Promise<StepOutcome<TrainingFreeStepPayload>> {
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
    payload: {
      kind: 'training-free',
      ...(merge ? { merge } : {}),
      proposed,
      applied: outcome.applied,
      skippedOperations: outcome.skipped,
      library: outcome.library,
    },
    warnings,
    end: { library: outcome.library },
    committed: () => [
      {
        type: 'operations',
        step,
        epoch: plan.epoch,
        ...(merge ? { merge } : {}),
        proposed,
        applied: outcome.applied,
        skipped: outcome.skipped,
        library: outcome.library,
      },
    ],
  };
}
