/**
 * What a GRPO method is to the driver (driver.ts): a run kind, how its records are checked, and
 * three hooks: `create` turns the method's start options into a new run, `validateHandles` checks
 * a resume's, and `open` turns a stored run into a `Drive`, the method's state for one drive with
 * the few hooks the one step calls (its prompt, its sampling, its work on a scored group, the
 * step's end, the run's result). The driver samples, rewards and computes advantages; it starts
 * and resumes every method alike (`startRun`, `resumeRun`). Training-free (lessons, exemplars),
 * gradient (head adapter or LoRA) and router are methods in lib/methods/<name>/; a new one is a
 * folder and an entry in the registry there.
 */
import type { ExportGroup } from './groups.js';
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import type { Completion, Policy, PromptInput, Usage } from '../core/policy.js';
import type { ItemResult, PayloadOf, RolloutRecord, RunWarning, StepExtras, StepPayloadBase, StepRecord } from '../store/records/index.js';
import type { DatasetItem } from '../core/dataset.js';
import type { ExperienceLibrary } from '../experience/types.js';
import type { RecordKind } from '../store/records/validate.js';
import type { Store } from '../store/store.js';
import type { LoopHandles } from './options.js';
import type { RunOf } from './run.js';
import type { EvaluationOption } from './held-out.js';
import type { StepPlan } from './schedule.js';

/** Extra fields a method adds to one of the driver's events. */
export type EventFields = Record<string, unknown>;

/** What every hook may use to tell the caller something: events, and warnings kept with the run. */
export interface Reporter {
  emit(event: { type: string } & EventFields): Promise<void>;
  warn(warning: RunWarning): Promise<void>;
}

/** A new run as a method makes it from its start options (checked synchronously). */
export interface NewRun<C, I = undefined> {
  /** The run's stored config (the sampling and schedule settings every method has, and its own). */
  config: C;
  /** The library the run starts from (training-free); empty by default. */
  initialLibrary?: ExperienceLibrary;
  /** What the first drive opens from that the store does not keep (a given adapter): `OpenContext.initial`. */
  initial?: I;
  /**
   * Refuses the run before it is stored where that needs async calls (do the prompts fit the
   * tokenizer's context?); `config` is the one to be stored, its held-out `evaluation` resolved.
   */
  check?(dataset: readonly DatasetItem[], config: C): Promise<void>;
}

/** What the driver hands `open`: the stored run, its store and handles, its last committed step. */
export interface OpenContext<R, H extends LoopHandles, P extends StepPayloadBase = StepPayloadBase, I = undefined> {
  run: R;
  store: Store;
  handles: H;
  /** The last committed step, absent before the first. */
  last: StepRecord<P> | undefined;
  /** `NewRun.initial` on a new run's first drive; absent on a resume. */
  initial?: I;
}

/** One item of the step being worked on. */
export interface ItemContext extends Reporter {
  plan: StepPlan;
  /** Position in the step's batch. */
  position: number;
  /** Dataset index. */
  index: number;
  item: DatasetItem;
  signal: AbortSignal;
  policy: Policy;
}

/** An item's prompt as the policy sees it, and what `item-start` reports besides it. */
export interface PreparedItem {
  prompt: PromptInput;
  /** Library ids put into the prompt (training-free). */
  experienceIds?: string[];
  /** Extra fields of the `item-start` event. */
  start?: EventFields;
}

/** A sampled group: G completions in row order, and what the method does with their rollouts. */
export interface SampledGroup {
  completions: Completion[];
  usage: Usage;
  /** The group's rollouts once rewarded, before the next item is sampled (the router marks and counts each row's arm). */
  rewarded?(rollouts: RolloutRecord[]): void;
}

/** How a step ended for the method: its part of the step record, and what it reports. */
export interface StepOutcome<P extends StepPayloadBase = StepPayloadBase> {
  /**
   * The method's part of the step record, `kind` its own (library and operations, training
   * metrics, routing; a method of another kind, its own JSON fields, which its `record` checks).
   */
  payload: P;
  /** Step-level warnings (already reported), kept with the step record. */
  warnings?: RunWarning[];
  /** Written in the same transaction as the step (the gradient method's adapter checkpoint). */
  extras?: StepExtras;
  /** Extra fields of the `step-end` event. */
  end?: EventFields;
  /** Runs once the step is committed (training-free takes its new library here); returns events emitted before `step-end`. */
  committed?(): Array<{ type: string } & EventFields>;
}

/** Where a run stands when it ends. */
export interface RunTally {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  warnings: number;
}

/** The driver's events a method may add fields to, with what it needs to know to fill them. */
export type DriveMoment<P extends StepPayloadBase = StepPayloadBase> =
  | { type: 'run-start' }
  | { type: 'step-start'; plan: StepPlan }
  /** The epoch's committed steps, a resumed run's earlier ones included. */
  | { type: 'epoch-end'; epoch: number; steps: StepRecord<P>[] }
  | { type: 'run-end'; tally: RunTally };

/** How the held-out evaluation samples (default: the run's policy, the item's prompt, the evaluation's temperature). */
export interface HeldOutSampling {
  policy?: Policy;
  prompt?(item: DatasetItem): Promise<PromptInput>;
  temperature?(item: DatasetItem, temperature: number): number;
}

/**
 * A method's state for one drive of a run (library, trainer, router), with the hooks of the step.
 * `R` is what the run resolves with, `P` the method's step payload.
 */
export interface Drive<R = unknown, P extends StepPayloadBase = StepPayloadBase> {
  /** How rewards become advantages besides groups and weights (scaling, estimator). Default: scaled per group. */
  readonly advantages?: Omit<AdvantageOptions, 'groupSize' | 'weights'>;
  /** Items of a step worked on at once. Default 1. */
  readonly concurrency?: number;
  /** How the held-out evaluation samples; see HeldOutSampling. */
  readonly heldOut?: HeldOutSampling;
  /** The item's prompt (default: the dataset's own). */
  prepare?(ctx: ItemContext): Promise<PreparedItem>;
  /** Samples the item's group (default: one `generateGroup` of G at the run's temperature). */
  sample?(ctx: ItemContext, prepared: PreparedItem): Promise<SampledGroup>;
  /**
   * Works on a scored group (rewards and advantages set) and adds its fields to the item result,
   * which the driver then stores. `rewards` are the combined rewards, NaN where none could score.
   */
  handleGroup?(ctx: ItemContext, result: ItemResult, rewards: number[]): Promise<void>;
  /**
   * Ends the step: `items` in batch order, `advantages` the step's, exactly as stored with the
   * items and emitted (rows are the items' rollouts, item after item).
   */
  finishStep(ctx: Reporter & { plan: StepPlan; signal: AbortSignal }, items: ItemResult[], advantages: AdvantageResult): Promise<StepOutcome<P>>;
  /** Extra fields of `run-start`, `step-start`, `epoch-end` (its `stats` default to the reward statistics) and `run-end`. */
  fields?(moment: DriveMoment<P>): EventFields;
  /** What the run resolves with (completed or aborted). */
  result(tally: RunTally): Promise<R>;
  /** The drive failed: free everything the state holds. */
  dispose?(): void;
}

/**
 * The types a method's code is checked by, by name: its run `kind`, and where the method has its
 * own, its `handles` (what a resume passes; default `LoopHandles`), the `result` a run resolves
 * with (default `unknown`), its step `payload` (default: the kind's own in the store's `RunKinds`,
 * else `{ kind, ...any JSON }`), its start `options` (default: its handles with the dataset) and
 * the `initial` value a new run's first drive opens from besides its stored config (a given
 * adapter; default `unknown`, which a method without one never reads). A field left out takes its
 * default (`ResolvedMethodTypes`); one that disagrees with the others (a payload of another kind,
 * start options without the handles) is `never`, so the hooks that use it do not compile.
 */
export interface MethodTypes {
  kind: string;
  handles?: LoopHandles;
  result?: unknown;
  payload?: StepPayloadBase;
  options?: StartOptions;
  initial?: unknown;
}

/** `T` with every field it leaves out at its default: the types a method's hooks are checked by. */
export interface ResolvedMethodTypes<T extends MethodTypes> {
  kind: T['kind'];
  handles: T extends { handles: infer H extends LoopHandles } ? H : LoopHandles;
  result: T extends { result: infer R } ? R : unknown;
  /** Of the method's kind. */
  payload: T extends { payload: infer P } ? (P extends StepPayloadBase & { kind: T['kind'] } ? P : never) : PayloadOf<T['kind']>;
  /** They carry the method's handles. */
  options: T extends { options: infer O } ? (O extends StartOptions<ResolvedMethodTypes<T>['handles']> ? O : never) : StartOptions<ResolvedMethodTypes<T>['handles']>;
  initial: T extends { initial: infer I } ? I : unknown;
}

/**
 * A method: its run kind, how the store checks its runs, and its hooks, checked by the types `T`
 * names (`MethodTypes`): `Method<{ kind: 'best-of-g'; result: BestOfGResult; payload:
 * BestOfGPayload; options: BestOfGOptions }>`.
 */
export interface Method<T extends MethodTypes = MethodTypes> {
  readonly kind: T['kind'];
  /** How the store checks this method's runs (config, step payload, rollout fields). */
  readonly record: RecordKind;
  /**
   * What of the policy its runs train: an adapter on the LM head, or one on every layer. Absent
   * where the model's weights stay as they are; a caller asks this instead of the method's kind
   * (which model to load, whether the policy may be wrapped, which adapter options apply).
   */
  readonly trains?: Trains;
  /** A new run from the method's start options, checked synchronously (`startRun` does the rest). */
  create(options: ResolvedMethodTypes<T>['options']): NewRun<RunOf<T['kind']>['config'], ResolvedMethodTypes<T>['initial']>;
  /** Checks a resume's handles (a start's are checked by `create`). */
  validateHandles(handles: ResolvedMethodTypes<T>['handles']): void;
  /** The method's state for one drive of the run, from the store and the last committed step. */
  open(ctx: OpenContext<RunOf<T['kind']>, ResolvedMethodTypes<T>['handles'], ResolvedMethodTypes<T>['payload'], ResolvedMethodTypes<T>['initial']>): Promise<Drive<ResolvedMethodTypes<T>['result'], ResolvedMethodTypes<T>['payload']>>;
  /** An item result as export groups (default: one group from the item's prompt). */
  exportGroups?(config: RunOf<T['kind']>['config'], runId: string, result: ItemResult): ExportGroup[];
}

/** What a method's runs train of the policy: its LM head's adapter, or an adapter on every layer. */
export type Trains = 'head' | 'layers';

/** What every method's start takes: its handles, the dataset, the new run's id, a held-out split. */
export type StartOptions<H extends LoopHandles = LoopHandles> = H & EvaluationOption & { dataset: DatasetItem[]; runId?: string };

/**
 * Any method, as the registry, the driver and `resumeRun` hold it: its config, state and result
 * are its own business, and it checks the start options and handles it is handed (`create`,
 * `validateHandles`: a caller such as the CLI passes every option it has), as it checks a stored
 * run through its `record`. Every method is one: its hooks are methods, so their parameters are
 * compared both ways.
 */
export type AnyMethod<H extends LoopHandles = LoopHandles, R = unknown> = Members<Method<{ kind: string; handles: H; result: R; payload: StepPayloadBase & { kind: string }; options: StartOptions<H>; initial: unknown }>>;

/**
 * The members of `T` as a type of its own: a method is compared with `AnyMethod` hook by hook, not
 * by its type arguments (its kind picks its run's type, which makes `Method` invariant in it).
 */
type Members<T> = { [M in keyof T]: T[M] };
