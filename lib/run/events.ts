/**
 * What a training-free run tells its caller, step by step: enough to draw a live UI (every rollout
 * with its text, reward and advantage, the critic's words, the operations and the library after
 * each step) and a progress bar with an ETA.
 */
import type { AppliedOperation, ExperienceLibrary, ExperienceOperation, SkippedOperation } from '../experience/types.js';
import type { Completion, PromptInput, Usage } from '../policy/types.js';
import type { CriticExchange, GroupStats, ItemResult, RunWarning, StepStats, TrainingFreeConfig } from '../store/records.js';

export interface Progress {
  /** The step in progress, or the last one when the run ends (1-based). */
  step: number;
  totalSteps: number;
  epoch: number;
  epochs: number;
  /** Items finished over the whole run (each epoch counts every item again). */
  itemsDone: number;
  totalItems: number;
}

export interface EpochStats {
  epoch: number;
  steps: number;
  groups: number;
  zeroSpreadGroups: number;
  /** Share of groups whose rewards did not differ (nothing to learn from them). */
  zeroSpreadFraction: number;
  rollouts: number;
  scorable: number;
  meanReward: number | null;
  stdReward: number | null;
  lessons: number;
  exemplars: number;
  /** lessons + exemplars at the end of the epoch. */
  librarySize: number;
  operations: { added: number; updated: number; deleted: number; skipped: number };
  warnings: number;
}

/** Where an event happened: its step and epoch (every loop's events share these). */
export interface StepRef {
  step: number;
  epoch: number;
}
export interface ItemRef extends StepRef {
  /** Dataset index. */
  item: number;
}

/** How every loop's run ends (the training-free loop adds its library and warning count). */
export interface RunEnd {
  type: 'run-end';
  runId: string;
  status: 'completed' | 'aborted' | 'failed';
  epochsCompleted: number;
  itemsProcessed: number;
  stepsCompleted: number;
  error?: string;
  progress: Progress;
}

/** The per-group events every loop emits (`rolloutGroup`): the completions, their rewards, their advantages. */
export type RolloutEvent =
  | (ItemRef & { type: 'rollouts'; completions: Completion[]; usage: Usage })
  | (ItemRef & { type: 'rewards'; rewards: Array<Array<number | null>>; combined: Array<number | null> })
  | (ItemRef & { type: 'advantages'; advantages: number[]; stats: GroupStats; zeroSpread: boolean });

export type TrainingFreeEvent =
  | { type: 'run-start'; runId: string; resumed: boolean; config: TrainingFreeConfig; library: ExperienceLibrary; progress: Progress }
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; library: ExperienceLibrary; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput; experienceIds: string[] })
  | RolloutEvent
  | (ItemRef & { type: 'summaries'; summaries: string[] })
  | (ItemRef & { type: 'critique'; exchange: CriticExchange<string[]> })
  | (ItemRef & { type: 'group-update'; exchange: CriticExchange<ExperienceOperation[]> })
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  | { type: 'warning'; warning: RunWarning }
  | (StepRef & {
      type: 'operations';
      merge?: CriticExchange<ExperienceOperation[]>;
      proposed: ExperienceOperation[];
      applied: AppliedOperation[];
      skipped: SkippedOperation[];
      library: ExperienceLibrary;
    })
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; library: ExperienceLibrary; progress: Progress })
  | { type: 'epoch-end'; epoch: number; stats: EpochStats; library: ExperienceLibrary; progress: Progress }
  | (RunEnd & { library: ExperienceLibrary; warnings: number });

export type TrainingFreeEventType = TrainingFreeEvent['type'];

/**
 * A rendezvous channel: `push` resolves when the consumer has taken the event, so the loop runs at
 * the pace of whoever iterates (and stops when they stop). After `close`, pushes are dropped.
 */
export class EventChannel<T> {
  #queue: Array<{ value: T; taken: () => void }> = [];
  #waiting: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }> = [];
  #ended = false;
  #error: { error: unknown } | undefined;

  push(value: T): Promise<void> {
    if (this.#ended) return Promise.resolve();
    const waiter = this.#waiting.shift();
    if (waiter) {
      waiter.resolve({ value, done: false });
      return Promise.resolve();
    }
    return new Promise((taken) => this.#queue.push({ value, taken }));
  }

  /** Ends the stream after what is queued (with `error`, the consumer's next pull rejects). */
  end(error?: { error: unknown }): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    if (this.#queue.length === 0) this.#flushWaiting();
  }

  /** The consumer is gone: drop what is queued and release every pusher. */
  close(): void {
    this.#ended = true;
    for (const entry of this.#queue.splice(0)) entry.taken();
    this.#error = undefined;
    this.#flushWaiting();
  }

  next(): Promise<IteratorResult<T>> {
    const entry = this.#queue.shift();
    if (entry) {
      entry.taken();
      if (this.#ended && this.#queue.length === 0) queueMicrotask(() => this.#flushWaiting());
      return Promise.resolve({ value: entry.value, done: false });
    }
    if (this.#ended) {
      const error = this.#error;
      this.#error = undefined;
      return error ? Promise.reject(error.error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #flushWaiting(): void {
    for (const waiter of this.#waiting.splice(0)) {
      if (this.#error) {
        waiter.reject(this.#error.error);
        this.#error = undefined;
      } else {
        waiter.resolve({ value: undefined, done: true });
      }
    }
  }
}
