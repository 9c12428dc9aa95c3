/**
 * The standard run of these tests: the alphabetise task (6 items, seed 1), groups of 4, batches of
 * 3, 2 epochs, on the scripted model. `recordReference` runs it once with a recording policy; the
 * other tests replay that recording, so every loop they run sees the same recorded model outputs.
 */
import {
  MemoryStore,
  recordingPolicy,
  trainingFreeGrpo,
  type ExperienceLibrary,
  type PolicyRecording,
  type RunBundle,
  type TrainingFreeEvent,
  type TrainingFreeGrpoOptions,
} from '../../../lib/index.js';
import { alphabetise } from '../../../lib/tasks/index.js';
import { scriptedPolicy, type ScriptedOptions } from './scripted-policy.js';

export type RunShape = Omit<TrainingFreeGrpoOptions, 'policy' | 'critic' | 'store' | 'signal'>;

export function standardShape(overrides: Partial<RunShape> = {}): RunShape {
  return {
    dataset: alphabetise.dataset({ size: 6, seed: 1 }),
    rewards: alphabetise.rewards,
    groupSize: 4,
    epochs: 2,
    batchSize: 3,
    task: 'alphabetise',
    ...overrides,
  };
}

export interface Reference {
  recording: PolicyRecording;
  library: ExperienceLibrary;
  libraryJson: string;
  events: TrainingFreeEvent[];
  bundle: RunBundle;
}

/** Runs the shape uninterrupted on the (recorded) scripted model. */
export async function recordReference(shape: RunShape, scripted: ScriptedOptions = {}): Promise<Reference> {
  const policy = recordingPolicy(scriptedPolicy(scripted));
  const store = new MemoryStore();
  const run = trainingFreeGrpo({ ...shape, policy, store, runId: 'reference' });
  const events: TrainingFreeEvent[] = [];
  for await (const event of run) events.push(event);
  const result = await run.result();
  return {
    recording: policy.recording(),
    library: result.library,
    libraryJson: JSON.stringify(result.library),
    events,
    bundle: await store.readBundle('reference'),
  };
}

/** A step record without its commit time (the only field that differs between equal runs). */
export function timeless<T extends { committedAt: string }>(step: T): Omit<T, 'committedAt'> {
  const { committedAt: _t, ...rest } = step;
  return rest;
}
