/**
 * Reading a step's payload without knowing its method: by kind, never by branching on the kind
 * here (the method's `record`, `RecordKind`, checks what the payload holds).
 */
import type { PayloadOf, StepPayloadBase, StepRecord } from './index.js';

/** The payload of `step` when it is of `kind`, else undefined (a method reading its own steps). */
export function payloadOf<K extends string>(step: StepRecord<StepPayloadBase> | undefined, kind: K): PayloadOf<K> | undefined {
  return step?.payload.kind === kind ? (step.payload as PayloadOf<K>) : undefined;
}
