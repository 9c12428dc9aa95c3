/**
 * Reading a step's payload without knowing its method: by kind, through the method's `record`
 * (`RecordKind`, registered with the method), never by branching on the kind here.
 */
import type { ExperienceLibrary } from '../experience/types.js';
import type { PayloadOf, StepPayloadBase, StepRecord } from './records.js';
import { recordKind } from './validate.js';

/** The payload of `step` when it is of `kind`, else undefined (a method reading its own steps). */
export function payloadOf<K extends string>(step: StepRecord<StepPayloadBase> | undefined, kind: K): PayloadOf<K> | undefined {
  return step?.payload.kind === kind ? (step.payload as PayloadOf<K>) : undefined;
}

/**
 * The experience library after `step`, for methods that keep one (training-free); undefined for a
 * method whose steps carry none (its prompts use the run's `initialLibrary` throughout).
 */
export function stepLibrary(step: StepRecord<StepPayloadBase>): ExperienceLibrary | undefined {
  return recordKind(step.payload.kind)?.library?.(step.payload as unknown as Record<string, unknown>);
}
