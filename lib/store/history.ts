import { NotFoundError } from '../errors.js';
import type { ExperienceLibrary } from '../experience/types.js';
import { stepLibrary } from './payload.js';
import type { Store } from './types.js';

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
