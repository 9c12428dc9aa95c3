/**
 * One committed step: the fields every method's steps share, and the method's payload, which is
 * read by kind (`payloadOf`), never by branching on the kind here (the method's `record`,
 * `RecordKind`, checks what the payload holds).
 */
import type { ItemResult, RunWarning } from './item.js';
import type { RunKinds, StepPayload, StoredCheckpoint } from './run.js';

export interface StepStats {
  groups: number;
  zeroSpreadGroups: number;
  rollouts: number;
  scorable: number;
  meanReward: number | null;
  stdReward: number | null;
  /** Runs with dynamic sampling: groups sampled again because their rewards all equalled, and the extra samplings. */
  resampledGroups?: number;
  resamples?: number;
  /** Runs with dynamic sampling: groups still flat after resampling, left out of the update. */
  droppedGroups?: number;
}

/**
 * What a method adds to its step records: an object whose `kind` is the run's kind. The store,
 * validation and export hand it to the method's `record` (`RecordKind`) by that kind.
 */
export interface StepPayloadBase {
  kind: string;
}

/** The payload of a kind: a known kind's own type (`RunKinds`), or any object of that kind for another method. */
export type PayloadOf<K extends string> = K extends keyof RunKinds ? Extract<StepPayload, { kind: K }> : StepPayloadBase & { kind: K };

/**
 * One committed step (one batch): the fields every method's steps share, and the method's
 * `payload`. `P` is the payload type; a method declares its own as `StepRecord<MyPayload>`.
 */
export interface StepRecord<P extends StepPayloadBase = StepPayload> {
  /** 1-based. */
  step: number;
  epoch: number;
  batch: number;
  items: ItemResult[];
  stats: StepStats;
  /** Step-level warnings (the batch merge); item warnings stay with their items. */
  warnings: RunWarning[];
  committedAt: string;
  /** The method's part of the step; `payload.kind` is the run's kind. */
  payload: P;
}

/** Store-side extras of a step commit, written in the same transaction. */
export interface StepExtras {
  /** Runs whose kind keeps an adapter: the adapter and optimizer after the step (the store keeps the latest). */
  adapter?: StoredCheckpoint;
}

/** The payload of `step` when it is of `kind`, else undefined (a method reading its own steps). */
export function payloadOf<K extends string>(step: StepRecord<StepPayloadBase> | undefined, kind: K): PayloadOf<K> | undefined {
  return step?.payload.kind === kind ? (step.payload as PayloadOf<K>) : undefined;
}
