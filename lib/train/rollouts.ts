/**
 * Groups of sampled completions and their rewards as the trainer's `GroupRolloutBatch`: completion
 * tokens padded to one length, the mask marking real tokens, the sampling log-probs as the old
 * log-probs, and the rewards (one per completion, or one row per completion of K functions).
 */
import { InvalidInputError } from '../errors.js';
import { GeneratedBatch, GeneratedSequenceBatch, GroupRolloutBatch, SequenceRolloutBatch } from '../math/batch.js';
import type { RewardValue } from '../math/advantages.js';

export interface RolloutCompletion {
  tokenIds: readonly number[];
  logprobs: readonly number[];
  /** Log-probs under the filtered distribution the tokens were drawn from (a policy's `sampledLogprobs`). */
  sampledLogprobs?: readonly number[];
  /** Why the completion ended; 'length' marks it truncated. */
  finishReason?: string;
}

export interface RolloutGroup {
  completions: readonly RolloutCompletion[];
  /** One reward per completion, or per completion one per reward function; null: could not score. */
  rewards: ReadonlyArray<RewardValue | readonly RewardValue[]>;
}

/** The groups of one step as the trainer's batch: every completion a row with its tokens, log-probs and rewards; all groups must be the same size. */
export function groupRolloutBatch(groups: readonly RolloutGroup[]): GroupRolloutBatch {
  if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of rollout groups.');
  const groupSize = groups[0].completions.length;
  const rows = groups.flatMap((group, g) => {
    if (group.completions.length !== groupSize || group.rewards.length !== groupSize) {
      throw new InvalidInputError(`groups[${g}]`, `must hold ${groupSize} completions and as many rewards, like the first group.`);
    }
    return group.completions.map((c: RolloutCompletion, i: number) => {
      if (c.logprobs.length !== c.tokenIds.length) {
        throw new InvalidInputError(`groups[${g}].completions[${i}]`, 'needs one log-prob per token (a backend that reports log-probs).');
      }
      return { tokens: c.tokenIds, logprobs: c.logprobs, reward: group.rewards[i] };
    });
  });
  // Rows are padded to at least one position so an all-empty group still forms a batch.
  const width = Math.max(1, ...rows.map((row) => row.tokens.length));
  const pad = <T>(values: readonly T[], fill: T) => [...values, ...new Array<T>(width - values.length).fill(fill)];
  const rewards = rows.map((row) => (Array.isArray(row.reward) ? [...row.reward] : (row.reward as RewardValue)));
  return new GroupRolloutBatch({
    rollout: new SequenceRolloutBatch({
      sequenceBatch: new GeneratedSequenceBatch({
        generation: new GeneratedBatch({ outputs: rows.map((row) => pad(row.tokens, 0)), rewards: rewards as never }),
        responseMask: rows.map((row) => pad(row.tokens.map(() => 1), 0)),
      }),
      oldLogProbs: rows.map((row) => pad(row.logprobs, 0)),
    }),
    groupSize,
  });
}

/**
 * The per-row extras `GrpoTrainer.trainStep` takes, in `groupRolloutBatch`'s row order and
 * padding: each completion's sampling log-probs (its `sampledLogprobs`, else its `logprobs`, which
 * are the same distribution when no filter was on) and whether it stopped at the length limit.
 */
export function rolloutSampling(groups: readonly RolloutGroup[]): { samplingLogprobs: number[][]; truncated: boolean[] } {
  const completions = groups.flatMap((group) => [...group.completions]);
  const width = Math.max(1, ...completions.map((c) => c.tokenIds.length));
  const samplingLogprobs = completions.map((c, i) => {
    const values = c.sampledLogprobs ?? c.logprobs;
    if (values.length !== c.tokenIds.length) {
      throw new InvalidInputError(`completions[${i}].sampledLogprobs`, `must hold one log-prob per token (${c.tokenIds.length}), got ${values.length}.`);
    }
    return [...values, ...new Array<number>(width - values.length).fill(0)];
  });
  return { samplingLogprobs, truncated: completions.map((c) => c.finishReason === 'length') };
}
