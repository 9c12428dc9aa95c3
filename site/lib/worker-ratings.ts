/**
 * "You" as the reward of a run in the model's worker (gradient and LoRA runs loop there, next to
 * the weights they train): the worker's reward waits for each completion's rating, which the page
 * posts to the worker when the person gives it (human-reward.svelte.ts). Completions cross the
 * worker boundary as copies, so a rating names its completion by run, step, prompt and row; the
 * worker names its own completions the same way as their group goes out to the page.
 */
import { AbortError, type Completion, type RewardFunction } from '../../lib/index.js';
import { HUMAN_REWARD } from './tasks.js';

/** Posted by the page to the model's worker: one completion's rating, as its reward from 0 to 1. */
export interface RatingMessage {
  webgrpo: 'rating';
  runId: string;
  step: number;
  item: number;
  row: number;
  reward: number;
}

export function isRatingMessage(data: unknown): data is RatingMessage {
  return typeof data === 'object' && data !== null && (data as { webgrpo?: unknown }).webgrpo === 'rating';
}

const keyOf = (runId: string, step: number, item: number, row: number) => `${runId}:${step}:${item}:${row}`;

/** The worker's side: the ratings received, and the rewards waiting for theirs. */
export class WorkerRatings {
  readonly #given = new Map<string, number>();
  readonly #waiting = new Map<string, { resolve(value: number): void; reject(error: Error): void }>();
  readonly #names = new WeakMap<Completion, string>();

  receive({ runId, step, item, row, reward }: RatingMessage): void {
    const key = keyOf(runId, step, item, row);
    const waiter = this.#waiting.get(key);
    if (waiter) {
      this.#waiting.delete(key);
      waiter.resolve(reward);
    } else this.#given.set(key, reward);
  }

  /** Names a group's completions as the page rates them (when the group goes out to the page). */
  name(runId: string, step: number, item: number, completions: readonly Completion[]): void {
    completions.forEach((completion, row) => this.#names.set(completion, keyOf(runId, step, item, row)));
  }

  /** The reward of a run rated on the page; cancelling the run stops the wait. */
  reward(signal: AbortSignal, weight = 1): RewardFunction {
    return {
      name: HUMAN_REWARD,
      weight,
      score: ({ completion }) => {
        const key = this.#names.get(completion);
        if (key === undefined) return null; // never shown to the person: no rating will come
        const given = this.#given.get(key);
        if (given !== undefined) {
          this.#given.delete(key);
          return given;
        }
        return new Promise<number>((resolve, reject) => {
          const cancelled = () => new AbortError('The run was cancelled while it waited for your ratings.');
          if (signal.aborted) return reject(cancelled());
          this.#waiting.set(key, { resolve, reject });
          signal.addEventListener(
            'abort',
            () => {
              this.#waiting.delete(key);
              reject(cancelled());
            },
            { once: true },
          );
        });
      },
    };
  }
}
