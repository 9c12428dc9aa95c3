import { NotFoundError } from '../../errors.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import { payloadOf } from '../../store/records/step.js';
import type { StepPayloadBase, StepRecord } from '../../store/records/index.js';
import type { Store } from '../../store/store.js';

/**
 * The experience library after `step`, for methods that keep one (training-free); undefined for a
 * method whose steps carry none (its prompts use the run's `initialLibrary` throughout).
 */
export function stepLibrary(step: StepRecord<StepPayloadBase>): ExperienceLibrary | undefined {
  return payloadOf(step, 'training-free')?.library;
}

/**
 * The library as it was after `step` (0: the initial library). Start a new run with it as
 * `initialExperiences` to branch from that point.
 */
export async function libraryAt(store: Store, runId: string, step: number): Promise<ExperienceLibrary> {
  if (step === 0) {
    const run = await store.getRun(runId);
    if (!run) throw new NotFoundError(`No run "${runId}" in this store.`);
    return run.initialLibrary;
  }
  const record = await store.getStep(runId, step);
  if (!record) throw new NotFoundError(`Run "${runId}" has no committed step ${step}.`);
  // A method whose steps keep no library prompts with the initial one throughout.
  return stepLibrary(record) ?? (await store.getRun(runId))!.initialLibrary;
}
