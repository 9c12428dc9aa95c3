/**
 * What every method's run tells its caller: the progress object, the per-group events the driver
 * emits (rollouts, rewards, advantages), how a run ends, and the channel events travel through.
 * Each method's own event union (training-free, gradient, router) builds on these.
 */
import type { Completion, Usage } from '../core/policy.js';
import type { EvaluationRecord, GroupStats } from '../store/records/index.js';

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

/** Where an event happened: its step and epoch (every method's events share these). */
export interface StepRef {
  step: number;
  epoch: number;
}
export interface ItemRef extends StepRef {
  /** Dataset index. */
  item: number;
}

/** How every run ends (the training-free method adds its library and warning count). */
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

/**
 * A held-out evaluation finished (runs given an `evaluation` split): after `epoch` (0: before the
 * first step), with `step` steps committed; the record is also kept in the run's `evaluations`.
 */
export interface EvalEvent {
  type: 'eval';
  epoch: number;
  step: number;
  evaluation: EvaluationRecord;
  progress: Progress;
}

/** The per-group events the driver emits for every method: the completions, their rewards, their advantages. */
export type RolloutEvent =
  | (ItemRef & { type: 'rollouts'; completions: Completion[]; usage: Usage })
  | (ItemRef & { type: 'rewards'; rewards: Array<Array<number | null>>; combined: Array<number | null> })
  | (ItemRef & { type: 'advantages'; advantages: number[]; stats: GroupStats; zeroSpread: boolean });

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
