/**
 * A stored run: its status, its kind and config (the loop's fields, which each method's stored
 * config builds on), its evaluations; the kinds the program knows.
 */
import type { EvaluationConfig, EvaluationRecord } from './evaluation.js';
import type { PolicyInfo } from '../../core/policy.js';

export type RunStatus = 'running' | 'aborted' | 'failed' | 'completed';

/**
 * The kinds of run, by kind: each method's record.ts adds its own with `declare module` (its
 * config, its step payload, and the adapter checkpoint it keeps, if any), so runs, payloads and
 * checkpoints are typed where they are used while the store names no method. A method of your
 * own adds its kind the same way, or goes without (`CustomRunRecord`).
 *
 * Where the kinds are declared: every `declare module` on the store's records is in a method's
 * own lib/methods/<method>/record.ts (`grep -rn "declare module" lib/methods` lists them), which
 * also adds that method's fields to `RunRecordBase`, `ItemResult` and `RolloutRecord`.
 *
 * Why an augmentation and not an explicit map imported here: the store sits below the methods and
 * imports nothing above it, type-only imports included (test/store/layer.test.ts), yet `Store`
 * returns `RunRecord`, the union of the known kinds that the driver and each method narrow by
 * `kind`. A map of the kinds has to import every method's record.ts, so it can only live above
 * the store; the store's signatures would then return the kind-blind `AnyRunRecord`, and every
 * caller would cast back to the union, or `Store` would take the run, payload, checkpoint and item
 * types as four type parameters that only the entries fill in. Declaration merging lets each
 * method add its kind from its own folder, and the store stay blind to them.
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

/**
 * What the configs of runs that sample one policy share: the groups and their schedule, the
 * sampling settings, the rewards, the seed and the policy.
 */
export interface LoopConfig {
  /** Completions per item (the GRPO group). */
  groupSize: number;
  epochs: number;
  /** Items (groups) per step. */
  batchSize: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  maxNewTokens: number;
  /** Reward functions by name and weight, in column order. */
  rewards: Array<{ name: string; weight: number }>;
  seed: number;
  shuffle: boolean;
  policy: PolicyInfo;
  /** Name of the built-in task the dataset came from, if any. */
  task?: string;
  /** The held-out split the run evaluates on, when it was given one. */
  evaluation?: EvaluationConfig;
  /** DAPO's dynamic sampling, when the run uses it. */
  dynamicSampling?: DynamicSamplingConfig;
}

/**
 * DAPO's dynamic sampling: a group whose rewards all equal carries no signal; it is sampled again
 * (fresh seeds) up to `maxResamples` times, and a group still flat is left out of the update.
 */
export interface DynamicSamplingConfig {
  maxResamples: number;
}
