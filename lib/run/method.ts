/**
 * What a GRPO method is to the driver (driver.ts): a small set of hooks around the one step the
 * driver owns. The driver samples, rewards and computes advantages; a method says how an item's
 * prompt is made, what it does with a scored group, how a step ends (its payload in the step
 * record) and what a run returns. Training-free (lessons, exemplars), gradient and router are
 * methods in lib/methods/<name>/; a new one is a folder and a registration there.
 */
import type { ExportGroup } from './groups.js';
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import type { Completion, Policy, PromptInput, Usage } from '../core/policy.js';
import type { ItemResult, PayloadOf, RolloutRecord, RunWarning, StepExtras, StepPayloadBase, StepRecord } from '../store/records.js';
import type { DatasetItem } from '../core/dataset.js';
import type { RecordKind } from '../store/validate.js';
import type { Store } from '../store/types.js';
import type { LoopHandles } from './options.js';
import type { RewardFunction } from '../core/reward.js';
import type { Run, RunOf } from './run.js';
import type { StepPlan } from './schedule.js';

/** Extra fields a method adds to one of the driver's events. */
export type EventFields = Record<string, unknown>;

/** What every hook may use to tell the caller something: events, and warnings kept with the run. */
export interface Reporter {
  emit(event: { type: string } & EventFields): Promise<void>;
  warn(warning: RunWarning): Promise<void>;
}

/** What the driver hands `open`: the stored run, its store and handles, its last committed step. */
export interface OpenContext<R, H extends LoopHandles, P extends StepPayloadBase = StepPayloadBase> {
  run: R;
  store: Store;
  handles: H;
  /** The last committed step, absent before the first. */
  last: StepRecord<P> | undefined;
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

/** A sampled group: G completions in row order, and how to mark the rollouts they became. */
export interface SampledGroup {
  completions: Completion[];
  usage: Usage;
  /** Adds the method's own fields to the group's rollouts (the router's arm per row). */
  annotate?(rollouts: RolloutRecord[]): void;
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
  /** Events emitted after the step is committed, before `step-end`. */
  committed?: Array<{ type: string } & EventFields>;
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


/**
 * A method's hooks. `S` is what the method keeps for the length of one drive (library, trainer,
 * router), `H` its handles, `R` the result a run resolves with, `P` its step payload (a built-in
 * kind's own type by default).
 */
export interface Method<K extends string = string, S = unknown, H extends LoopHandles = LoopHandles, R = unknown, P extends StepPayloadBase & { kind: K } = PayloadOf<K>> {
  readonly kind: K;
  /** The function that resumes this method's runs (named in errors). */
  readonly resumeWith: string;
  /** How the store checks this method's runs (config, step payload, rollout fields). */
  readonly record: RecordKind;
  /**
   * Starts a run from the method's options (its start function: the CLI and tools start any
   * registered method through this); options a method does not know are ignored.
   */
  start?(options: StartOptions<H>): Run<{ type: string }, R>;
  /** Resumes a stored run of this method (its resume function). */
  resume?(runId: string, handles: H & { store: Store }): Run<{ type: string }, R>;
  /** Checks a resume's handles (a start's are checked when its options are resolved). */
  validateHandles(handles: H): void;
  /** How rewards become advantages (weights, scaling, estimator); groups come from the config. */
  advantages(config: RunOf<K>['config']): Omit<AdvantageOptions, 'groupSize'>;
  /** Items of a step worked on at once. Default 1. */
  concurrency?(config: RunOf<K>['config']): number;

  /**
   * Checks a new run against its handles before it is stored, where that needs async calls (the
   * policy's tokenizer: do the prompts fit its context?); throws an InvalidInputError to refuse it.
   */
  preflight?(run: RunOf<K>, dataset: readonly DatasetItem[], handles: H): Promise<void>;
  /** The method's state for one drive of the run, from the store and the last committed step. */
  open(ctx: OpenContext<RunOf<K>, H, P>): Promise<S>;
  /** Extra fields of `run-start`. */
  runStart?(state: S): EventFields;
  /** Runs before each step; returns extra fields of `step-start`. */
  stepStart?(state: S, plan: StepPlan): Promise<EventFields>;
  /** The item's prompt (default: the dataset's own). */
  prepare?(state: S, ctx: ItemContext): Promise<PreparedItem>;
  /**
   * A held-out item's prompt for the run's evaluation, from the state as it stands (default: the
   * item's own; training-free puts the library in, as it does for training items).
   */
  evaluationPrompt?(state: S, item: DatasetItem): Promise<PromptInput>;
  /**
   * A held-out item's sampling temperature, given the evaluation's (default: that one; the router
   * scales it by the arm it routes the item to, as its rollouts are).
   */
  evaluationTemperature?(state: S, item: DatasetItem, temperature: number): number;
  /**
   * The policy the run's evaluation samples (default: the run's own). A method that samples from
   * another one as it trains (a model with its updates merged in) returns that.
   */
  evaluationPolicy?(state: S): Policy;
  /** Samples the item's group (default: one `generateGroup` of G at the run's temperature). */
  sample?(state: S, ctx: ItemContext, prepared: PreparedItem): Promise<SampledGroup>;
  /** Sees each item's rewards as soon as they are known, in batch order (finished items of a resumed step too). */
  rewarded?(state: S, result: Pick<ItemResult, 'prompt' | 'rollouts'>): void;
  /**
   * Works on a scored group (rewards and advantages set) and adds its fields to the item result,
   * which the driver then stores. `rewards` are the combined rewards, NaN where none could score.
   */
  handleGroup?(state: S, ctx: ItemContext, result: ItemResult, rewards: number[]): Promise<void>;
  /**
   * Ends the step: `items` in batch order, `advantages` the step's, exactly as stored with the
   * items and emitted (rows are the items' rollouts, item after item).
   */
  finishStep(state: S, ctx: Reporter & { plan: StepPlan; signal: AbortSignal }, items: ItemResult[], advantages: AdvantageResult): Promise<StepOutcome<P>>;
  /** The step is committed. */
  committed?(state: S, record: StepRecord<P>): void;
  /** An item result as export groups (default: one group from the item's prompt). */
  exportGroups?(config: RunOf<K>['config'], runId: string, result: ItemResult): ExportGroup[];
  /** Extra fields of `epoch-end` (its `stats`), from the epoch's committed steps. */
  epochEnd(state: S, epoch: number, steps: StepRecord<P>[]): EventFields;
  /** Extra fields of `run-end`. */
  runEnd?(state: S, tally: RunTally): EventFields;
  /** What the run resolves with. */
  result(state: S, tally: RunTally): Promise<R>;
  /** The drive stopped early (abort or failure): free what a step held. */
  interrupted?(state: S): void;
  /** The drive failed: free everything the state holds. */
  dispose?(state: S): void;
}

/** What every method's start function takes: its handles, the dataset, and the method's own options. */
export type StartOptions<H> = H & { dataset: DatasetItem[]; runId?: string; task?: string; [option: string]: unknown };

/** The reward functions and other inputs every drive of a run needs. */
export interface DriveInputs<H> {
  store: Store;
  runId: string;
  handles: H;
  rewards: RewardFunction[];
  resumed: boolean;
}
