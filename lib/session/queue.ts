/**
 * A FIFO queue in front of one model. A model session (onnxruntime, WebGPU) runs one inference at a
 * time; callers that share it (interleaved ask/tell tasks, concurrent HTTP requests) wait their turn
 * here instead of corrupting each other. Waiting work can be cancelled, and the wait is bounded.
 */
import { AbortError, BusyError, InvalidInputError } from '../errors.js';
import type { Policy } from '../core/policy.js';

export interface QueueOptions {
  /** Tasks allowed to run at once. Default 1: a local model runs one inference at a time. */
  concurrency?: number;
  /** Tasks allowed to wait; one more is refused with a `BusyError`. Default: unbounded. */
  maxPending?: number;
}

export interface QueueStats {
  running: number;
  pending: number;
}

export interface TaskQueue {
  /**
   * Runs `task` when a slot is free. If `signal` fires while the task still waits, it leaves the
   * queue and the promise rejects with an `AbortError`; once started, cancelling is the task's job.
   */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  readonly stats: QueueStats;
}

interface Waiter {
  start: () => void;
}

/** A FIFO queue that runs at most `concurrency` tasks at once (default 1) and refuses work past `maxPending` with a `BusyError`; share one in front of a model. */
export function createTaskQueue(options: QueueOptions = {}): TaskQueue {
  const concurrency = options.concurrency ?? 1;
  const maxPending = options.maxPending ?? Infinity;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InvalidInputError('concurrency', `must be a positive integer, got ${concurrency}`);
  }
  if (!(maxPending >= 0)) throw new InvalidInputError('maxPending', `must be >= 0, got ${maxPending}`);

  let running = 0;
  const waiting: Waiter[] = [];

  function release(): void {
    running--;
    const next = waiting.shift();
    if (next) next.start();
  }

  return {
    get stats() {
      return { running, pending: waiting.length };
    },

    run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      if (signal?.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }));
      const execute = (): Promise<T> => {
        running++;
        let result: Promise<T>;
        try {
          result = task();
        } catch (error) {
          result = Promise.reject(error);
        }
        return result.finally(release);
      };
      if (running < concurrency) return execute();
      if (waiting.length >= maxPending) {
        return Promise.reject(
          new BusyError(`${waiting.length} requests are already waiting for the model; retry later.`),
        );
      }
      return new Promise<T>((resolve, reject) => {
        const onAbort = () => {
          const at = waiting.indexOf(waiter);
          if (at >= 0) waiting.splice(at, 1);
          reject(new AbortError(undefined, { cause: signal?.reason }));
        };
        const waiter: Waiter = {
          start: () => {
            signal?.removeEventListener('abort', onAbort);
            execute().then(resolve, reject);
          },
        };
        waiting.push(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}

/** `policy` with its model calls (generation, scoring) waiting in `queue`; tokenizer calls go straight through. */
export function queuedPolicy(policy: Policy, queue: TaskQueue): Policy {
  return {
    info: policy.info,
    generateGroup: (o) => queue.run(() => policy.generateGroup(o), o.signal),
    ...(policy.scoreCompletions && { scoreCompletions: (o) => queue.run(() => policy.scoreCompletions!(o), o.signal) }),
    ...(policy.encode && { encode: (text) => policy.encode!(text) }),
    ...(policy.decode && { decode: (ids, o) => policy.decode!(ids, o) }),
    dispose: () => policy.dispose(),
  };
}

/** Per-key mutual exclusion: work for one key runs in call order, work for different keys in parallel. */
export interface KeyedLock {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Resolves when everything started so far has settled. */
  idle(): Promise<void>;
}

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<void>>();
  return {
    run<T>(key: string, work: () => Promise<T>): Promise<T> {
      const result = (tails.get(key) ?? Promise.resolve()).then(work);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    async idle() {
      await Promise.all(tails.values());
    },
  };
}
