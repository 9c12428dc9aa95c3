/** A stored run: its status, its kind and config, its evaluations; the kinds the program knows. */
import type { EvaluationRecord } from './evaluation.js';
import type { LoopConfig } from './run-config.js';

export type RunStatus = 'running' | 'aborted' | 'failed' | 'completed';

/**
 * The kinds of run, by kind: each method's record.ts adds its own with `declare module` (its
 * config, its step payload, and the adapter checkpoint it keeps, if any), so runs, payloads and
 * checkpoints are typed where they are used while the store names no method. A method of your
 * own adds its kind the same way, or goes without (`CustomRunRecord`).
 */
export interface RunKinds {}

/** What a kind declares in `RunKinds`. */
export interface RunKind {
  config: object;
  payload: { kind: string };
  checkpoint?: object;
}

/** The fields every run record has, whatever its kind (a method adds its own with `declare module`). */
export interface RunRecordBase {
  id: string;
  status: RunStatus;
  /** Why the run failed or stopped, when it did. */
  error?: string;
  createdAt: string;
  updatedAt: string;
  itemCount: number;
  /** Evaluations on the run's held-out split, by epoch (0: before the first step). */
  evaluations?: EvaluationRecord[];
}

type Kinds = { [K in keyof RunKinds]: RunKinds[K] extends RunKind ? RunKinds[K] : never };

/** The stored run of a known kind. */
export type RunRecordOf<K extends keyof RunKinds> = RunRecordBase & { kind: K; config: Kinds[K]['config'] };

/**
 * A run of any kind as a store keeps it: the common fields, its kind, and a config with the loop's
 * settings and whatever else its method stores (plain JSON, checked by the kind's `RecordKind`).
 */
export interface AnyRunRecord extends RunRecordBase {
  kind: string;
  config: LoopConfig;
}

/** A stored run; `kind` tells which loop runs it (and the shape of its config). */
export type RunRecord = { [K in keyof RunKinds]: RunRecordOf<K> }[keyof RunKinds];

/** The step payloads of the known kinds. */
export type StepPayload = Kinds[keyof RunKinds]['payload'];

/** The adapter checkpoints the known kinds keep (opaque to the store, which hands them to the kind's `RecordKind.adapter`). */
export type StoredCheckpoint = { [K in keyof RunKinds]: Kinds[K] extends { checkpoint: infer C } ? C : never }[keyof RunKinds];
