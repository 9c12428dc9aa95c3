/**
 * "You" as the reward: the person rates each completion of a group, and the loop waits for the
 * ratings as it waits for any asynchronous reward. A rating of 1 to 5 stars is the reward
 * (stars - 1) / 4, so 1 is 0 and 5 is 1 (thumbs down and up are 1 and 5). The ratings are stored
 * with the step like any other reward column and exported with it.
 *
 * The groups waiting are the ones whose rollouts the page has seen (`show`); a completion is
 * matched to its rating by identity, since the loop scores the very completions it emitted. Runs
 * that loop on the page use that (training-free, router); for runs in the model's worker
 * (gradient, LoRA) each rating is also relayed there (`relay`, worker-ratings.ts), where their
 * loop waits for it.
 */
import { AbortError, type Completion, type RewardFunction } from '../../lib/index.js';
import { HUMAN_REWARD } from './tasks.js';

export interface RatingGroup {
  step: number;
  /** The prompt's index in the run's dataset. */
  item: number;
  prompt: string;
  texts: string[];
  /** Stars per row, null until rated. */
  stars: Array<number | null>;
}

export const starsToReward = (stars: number): number => (stars - 1) / 4;

/** Sends a rating on to where the run's loop waits for it (a run in the model's worker). */
export type RatingRelay = (group: RatingGroup, row: number, reward: number) => void;

export class HumanRatings {
  /** Groups with at least one completion not yet rated, oldest first. */
  groups = $state<RatingGroup[]>([]);
  #completions = new Map<RatingGroup, Completion[]>();
  #given = new WeakMap<Completion, number>();
  #waiting = new Map<Completion, { resolve(value: number): void; reject(error: Error): void }>();
  /** Where the ratings of the run in progress go as well, when it loops in the model's worker. */
  relay: RatingRelay | null = null;

  /** A group's completions as the page sees them, before the loop scores them. */
  show(step: number, item: number, prompt: string, completions: Completion[]): void {
    const group: RatingGroup = { step, item, prompt, texts: completions.map((c) => c.text), stars: completions.map(() => null) };
    this.groups.push(group);
    this.#completions.set(this.groups[this.groups.length - 1], completions);
  }

  /** Rates row `row` of `group` with 1 to 5 stars; the loop, if it waits for that row, goes on. */
  rate(group: RatingGroup, row: number, stars: number): void {
    const completion = this.#completions.get(group)?.[row];
    if (!completion || !Number.isInteger(stars) || stars < 1 || stars > 5) return;
    group.stars[row] = stars;
    this.#given.set(completion, starsToReward(stars));
    this.#waiting.get(completion)?.resolve(starsToReward(stars));
    this.#waiting.delete(completion);
    this.relay?.(group, row, starsToReward(stars));
    if (group.stars.every((s) => s !== null)) {
      this.#completions.delete(group);
      this.groups = this.groups.filter((g) => g !== group);
    }
  }

  /** The reward function of a run rated here; cancelling the run stops the wait. */
  reward(signal: AbortSignal, weight = 1): RewardFunction {
    return {
      name: HUMAN_REWARD,
      weight,
      score: ({ completion }) => {
        const given = this.#given.get(completion);
        if (given !== undefined) return given;
        return new Promise<number>((resolve, reject) => {
          if (signal.aborted) return reject(new AbortError('The run was cancelled while it waited for your ratings.'));
          this.#waiting.set(completion, { resolve, reject });
          signal.addEventListener('abort', () => reject(new AbortError('The run was cancelled while it waited for your ratings.')), { once: true });
        });
      },
    };
  }

  /** Forgets the groups of a run that stopped. */
  clear(): void {
    for (const waiter of this.#waiting.values()) waiter.reject(new AbortError('The run stopped while it waited for your ratings.'));
    this.#waiting.clear();
    this.#completions.clear();
    this.groups = [];
    this.relay = null;
  }
}
