/**
 * What the panels read from a committed step's payload, whatever method made it: one reader per
 * payload kind, looked up by the step's `payload.kind`, so the panels never branch on the kind.
 * A method's reader fills what its steps carry; everything else stays empty.
 */
import type { AppliedOperation, ExperienceLibrary, StepPayload, StepRecord, StepRouting } from '../../lib/index.js';
import { stepLibrary } from '../../lib/method.js';
import type { TrainStepMetrics } from '../../lib/grad.js';

export interface StepPayloadView {
  /** The experience library after the step (training-free). */
  library?: ExperienceLibrary;
  /** The library operations the step applied (training-free). */
  applied: AppliedOperation[];
  /** The optimizer updates of the step, in order (gradient, lora). */
  updates: TrainStepMetrics[];
  /** The router after the step (router). */
  routing?: StepRouting;
}

type Readers = { [K in StepPayload['kind']]: (payload: Extract<StepPayload, { kind: K }>) => Partial<StepPayloadView> };

const READERS: Readers = {
  'training-free': (payload) => ({ applied: payload.applied }),
  gradient: (payload) => ({ updates: payload.training }),
  lora: (payload) => ({ updates: payload.training }),
  router: (payload) => ({ routing: payload.routing }),
};

/** The step's payload as the panels read it (empty parts for a kind the playground does not draw). */
export function stepView(step: StepRecord): StepPayloadView {
  const read = READERS[step.payload.kind] as ((payload: StepPayload) => Partial<StepPayloadView>) | undefined;
  const library = stepLibrary(step);
  return { applied: [], updates: [], ...(library ? { library } : {}), ...read?.(step.payload) };
}
