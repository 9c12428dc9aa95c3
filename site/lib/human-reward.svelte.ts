/**
 * "You" as the reward: the person rates each completion of a group, and the loop waits for the
 * ratings as it waits for any asynchronous reward. A rating of 1 to 5 stars is the reward
 * (stars - 1) / 4, so 1 is 0 and 5 is 1 (thumbs down and up are 1 and 5). The ratings are stored
 * with the step like any other reward column and exported with it.
 *
 * The groups waiting are the ones whose rollouts the page has seen (`show`); a completion is
 * matched to its rating by identity, since the loop scores the very completions it emitted. Runs
 * that loop on the page use it (training-free, router); gradient runs score in the model's worker.
 */
import { AbortError, type Completion, type RewardFunction } from '../../lib/index.js';
import { HUMAN_REWARD } from './tasks.js';

export interface RatingGroup {
  /** The prompt's index in the run's dataset. */
  item: number;
  prompt: string;
  texts: string[];
  /** Stars per row, null until rated. */
  stars: Array<number | null>;
}

export const starsToReward = (stars: number): number => (stars - 1) / 4;

/** Why gradient and LoRA runs do not take the "You" reward, shown where the choice is offered. */
export const RATING_REASON =
  'Gradient and LoRA runs loop in the model’s worker, next to the weights they train, and score completions there: it cannot wait for your ratings on this page. Rate completions with a training-free or router run.';

export class HumanRatings {
  /** Groups with at least one completion not yet rated, oldest first. */
  groups = $state<RatingGroup[]>([]);
  #completions = new Map<RatingGroup, Completion[]>();
  #given = new WeakMap<Completion, number>();
  #waiting = new Map<Completion, { resolve(value: number): void; reject(error: Error): void }>();

  /** A group's completions as the page sees them, before the loop scores them. */
  show(item: number, prompt: string, completions: Completion[]): void {
    const group: RatingGroup = { item, prompt, texts: completions.map((c) => c.text), stars: completions.map(() => null) };
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
  }
}
