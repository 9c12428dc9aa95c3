/**
 * Group-relative advantages: how much better each completion did than its siblings for the same
 * prompt. Semantics are TRL's `GRPOTrainer._generate_and_score_completions` (and `RLOOTrainer`
 * for `estimator: 'rloo'`) on one process, read from trl/trainer/grpo_trainer.py and
 * rloo_trainer.py:
 *
 * - A missing reward (`null`, `undefined` or NaN: the reward function could not score the row)
 *   is skipped by the weighted sum (`nansum`). A row every function skipped is unscorable: its
 *   combined reward is NaN, it is left out of its group's mean and std, and its advantage is 0.
 * - Means and stds skip NaN; the std is the sample std (N-1) and is NaN with fewer than two
 *   scorable rows, which makes the affected advantages NaN and therefore 0 (`nan_to_num`).
 * - `scaleRewards: 'batch'` keeps the per-group mean but divides by the std of the whole batch.
 * - `normalize_then_sum` (GDPO) ignores `scaleRewards`, as TRL does: every function is
 *   normalised per group, the weighted sum is normalised over the batch.
 * - `rloo` subtracts the mean of the other scorable rows of the group and does not scale
 *   (RLOOTrainer's default `normalize_advantages=False`); `scaleRewards` does not apply to it.
 *
 * Deliberate differences from TRL: inputs are validated up front (TRL would propagate an
 * infinite reward or silently mis-shape a batch whose size is not a multiple of the group), and
 * `rloo` with `normalize_then_sum` is rejected because TRL's RLOOTrainer has no such mode.
 */
import { InvalidInputError } from '../errors.js';
import { describe, finiteNumber, integerAtLeast, isArrayLike, oneOf } from './validate.js';

export type RewardValue = number | null | undefined;

/** One reward per row, or one row of K rewards (one per reward function) per completion. */
export type RewardTable = ArrayLike<RewardValue> | readonly ArrayLike<RewardValue>[];

export type ScaleRewards = 'group' | 'batch' | 'none';
export type RewardAggregation = 'sum_then_normalize' | 'normalize_then_sum';
export type AdvantageEstimator = 'grpo' | 'rloo';

export interface AdvantageOptions {
  /** Rows are consecutive groups of this many completions of the same prompt (>= 2). */
  groupSize: number;
  /** One weight per reward function; default 1 each. */
  weights?: readonly number[];
  /** Divide by the group's std (default), the batch's std, or not at all (TRL's legacy `true` / `false` mean 'group' / 'none'). */
  scaleRewards?: ScaleRewards | boolean;
  /** Combine functions before normalising (default) or normalise each first (GDPO). */
  aggregation?: RewardAggregation;
  /** Group mean baseline (default) or leave-one-out baseline. */
  estimator?: AdvantageEstimator;
}

export interface AdvantageResult {
  /** One advantage per row; 0 for unscorable rows. */
  advantages: number[];
  /** Weighted sum of each row's rewards, skipping missing ones; NaN where the row is unscorable. */
  rewards: number[];
  /** Mean of `rewards` over the scorable rows of each group (NaN if none). */
  groupMeans: number[];
  /** Sample std of `rewards` over the scorable rows of each group (NaN if fewer than two). */
  groupStds: number[];
  /**
   * TRL's `frac_reward_zero_std`: the share of rows whose scaling std is zero (|std| <= 1e-8),
   * i.e. the fraction of groups with zero std for `scaleRewards` 'group' and 'none' and for
   * `rloo`; 0 or 1 when the std is the batch's ('batch', `normalize_then_sum`).
   */
  fracRewardZeroStd: number;
}

/** TRL adds this to the std before dividing, so a zero-std group gives zero advantages. */
const STD_EPS = 1e-4;
/** `torch.isclose(std, 0)` with its default atol. */
const ZERO_STD_ATOL = 1e-8;

/** Each row's advantage within its group of `groupSize` rows, from one reward per row or one per reward function (weighted), as TRL computes them; with the combined rewards and the group statistics. */
export function computeAdvantages(rewards: RewardTable, options: AdvantageOptions): AdvantageResult {
  if (options === null || typeof options !== 'object') {
    throw new InvalidInputError('options', 'must be an object with at least groupSize.');
  }
  const { values, n, k } = readRewards(rewards);
  const { groupSize, weights, scale, aggregation, estimator } = readOptions(options, n, k);
  const combined = weightedSums(values, n, k, weights);
  const groups = n / groupSize;
  const groupMeans = new Array<number>(groups);
  const groupStds = new Array<number>(groups);
  for (let g = 0; g < groups; g++) {
    groupMeans[g] = stridedNanMean(combined, g * groupSize, groupSize, 1);
    groupStds[g] = stridedNanStd(combined, g * groupSize, groupSize, 1, groupMeans[g]);
  }

  const advantages = new Array<number>(n);
  let zeroStdRows: number;
  if (aggregation === 'normalize_then_sum') {
    zeroStdRows = batchNormalized(normalizedSums(values, n, k, weights, groupSize), advantages);
  } else if (estimator === 'rloo') {
    leaveOneOut(combined, groupSize, advantages);
    zeroStdRows = countZeroGroups(groupStds) * groupSize;
  } else if (scale === 'batch') {
    const s = stridedNanStd(combined, 0, n, 1, stridedNanMean(combined, 0, n, 1));
    for (let i = 0; i < n; i++) advantages[i] = (combined[i] - groupMeans[(i / groupSize) | 0]) / (s + STD_EPS);
    zeroStdRows = isZero(s) ? n : 0;
  } else {
    for (let i = 0; i < n; i++) {
      const g = (i / groupSize) | 0;
      const centred = combined[i] - groupMeans[g];
      advantages[i] = scale === 'none' ? centred : centred / (groupStds[g] + STD_EPS);
    }
    zeroStdRows = countZeroGroups(groupStds) * groupSize;
  }
  for (let i = 0; i < n; i++) if (advantages[i] !== advantages[i]) advantages[i] = 0;

  return {
    advantages,
    rewards: toArray(combined),
    groupMeans,
    groupStds,
    fracRewardZeroStd: zeroStdRows / n,
  };
}

function readOptions(options: AdvantageOptions, n: number, k: number) {
  const groupSize = integerAtLeast('groupSize', options.groupSize, 2);
  if (n % groupSize !== 0) {
    throw new InvalidInputError(
      'groupSize',
      `${groupSize} does not divide the ${n} rows of rewards; rows must be whole consecutive groups.`,
    );
  }
  const weights = readWeights(options.weights, k);
  const scaleOption = options.scaleRewards ?? 'group';
  const scale = oneOf('scaleRewards', scaleOption === true ? 'group' : scaleOption === false ? 'none' : scaleOption, [
    'group',
    'batch',
    'none',
  ] as const);
  const aggregation = oneOf('aggregation', options.aggregation ?? 'sum_then_normalize', [
    'sum_then_normalize',
    'normalize_then_sum',
  ] as const);
  const estimator = oneOf('estimator', options.estimator ?? 'grpo', ['grpo', 'rloo'] as const);
  if (estimator === 'rloo' && aggregation === 'normalize_then_sum') {
    throw new InvalidInputError('estimator', "'rloo' combines rewards by 'sum_then_normalize' only (as TRL's RLOOTrainer).");
  }
  return { groupSize, weights, scale, aggregation, estimator };
}

/** normalize_then_sum: the per-reward group-normalised sums, normalised again over the batch; returns the zero-std rows. */
function batchNormalized(normalized: ArrayLike<number>, advantages: number[]): number {
  const n = advantages.length;
  const m = stridedNanMean(normalized, 0, n, 1);
  const s = stridedNanStd(normalized, 0, n, 1, m);
  for (let i = 0; i < n; i++) advantages[i] = (normalized[i] - m) / (s + STD_EPS);
  return isZero(s) ? n : 0;
}

/** RLOO: each row's reward minus the mean of its scorable siblings' rewards. */
function leaveOneOut(combined: ArrayLike<number>, groupSize: number, advantages: number[]): void {
  for (let g = 0; g < advantages.length / groupSize; g++) {
    let sum = 0;
    let count = 0;
    for (let i = g * groupSize; i < (g + 1) * groupSize; i++) {
      if (combined[i] === combined[i]) {
        sum += combined[i];
        count++;
      }
    }
    // One scorable row leaves no siblings: 0/0 = NaN, zeroed below like TRL's nan_to_num.
    for (let i = g * groupSize; i < (g + 1) * groupSize; i++) {
      advantages[i] = combined[i] - (sum - combined[i]) / (count - 1);
    }
  }
}

/**
 * Each row's combined reward: the weighted sum of its scorable rewards, NaN where none could score
 * (what `computeAdvantages` returns as `rewards`, before any group is formed).
 */
export function combinedRewards(rewards: RewardTable, weights?: readonly number[]): number[] {
  const { values, n, k } = readRewards(rewards);
  return toArray(weightedSums(values, n, k, readWeights(weights, k)));
}

/** Flattens the reward table into N*K float64 values, NaN where a reward is missing. */
function readRewards(rewards: RewardTable): { values: Float64Array; n: number; k: number } {
  if (!isArrayLike(rewards)) {
    throw new InvalidInputError('rewards', `must be an array (one reward per row) or an array of rows, got ${describe(rewards)}.`);
  }
  const n = rewards.length;
  if (n === 0) throw new InvalidInputError('rewards', 'is empty; give one reward (or row of rewards) per completion.');
  const table = isArrayLike(rewards[0]);
  const k = table ? (rewards[0] as ArrayLike<RewardValue>).length : 1;
  if (k === 0) throw new InvalidInputError('rewards', 'rows are empty; give one column per reward function.');
  const values = new Float64Array(n * k);
  if (!table) {
    // A row that is itself an array fails readReward's number check.
    for (let i = 0; i < n; i++) values[i] = readReward(rewards[i] as RewardValue, i, -1);
    return { values, n, k };
  }
  for (let i = 0; i < n; i++) {
    const row = rewards[i];
    if (!isArrayLike(row)) {
      throw new InvalidInputError('rewards', `row ${i} is ${describe(row)}; use either numbers or rows of numbers throughout.`);
    }
    if (row.length !== k) {
      throw new InvalidInputError('rewards', `row ${i} has ${row.length} values but row 0 has ${k}; give one column per reward function (null where it could not score).`);
    }
    for (let j = 0; j < k; j++) values[i * k + j] = readReward(row[j] as RewardValue, i, j);
  }
  return { values, n, k };
}

function readReward(value: RewardValue, row: number, column: number): number {
  if (value === null || value === undefined) return NaN;
  if (typeof value !== 'number' || value === Infinity || value === -Infinity) {
    const at = column < 0 ? `[${row}]` : `[${row}][${column}]`;
    throw new InvalidInputError('rewards', `${at} is ${describe(value)}; rewards must be finite numbers, or null/NaN when not scorable.`);
  }
  return value;
}

function readWeights(weights: readonly number[] | undefined, k: number): Float64Array {
  const out = new Float64Array(k).fill(1);
  if (weights === undefined) return out;
  if (!isArrayLike(weights) || weights.length !== k) {
    throw new InvalidInputError('weights', `must have one weight per reward function (${k}), got ${describe(weights)}.`);
  }
  for (let j = 0; j < k; j++) out[j] = finiteNumber('weights', weights[j]);
  return out;
}

/** Weighted sum per row skipping missing rewards; NaN when every reward of the row is missing. */
function weightedSums(values: Float64Array, n: number, k: number, weights: Float64Array): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    let scored = false;
    for (let j = 0; j < k; j++) {
      const v = values[i * k + j];
      if (v === v) {
        sum += v * weights[j];
        scored = true;
      }
    }
    out[i] = scored ? sum : NaN;
  }
  return out;
}

/** GDPO: each function's rewards normalised within the group, then the weighted (nan)sum. */
function normalizedSums(values: Float64Array, n: number, k: number, weights: Float64Array, groupSize: number): Float64Array {
  const out = new Float64Array(n);
  const scored = new Uint8Array(n);
  for (let start = 0; start < n; start += groupSize) {
    for (let j = 0; j < k; j++) {
      const m = stridedNanMean(values, start * k + j, groupSize, k);
      const s = stridedNanStd(values, start * k + j, groupSize, k, m);
      for (let i = start; i < start + groupSize; i++) {
        const v = values[i * k + j];
        if (v !== v) continue;
        scored[i] = 1;
        const z = ((v - m) / (s + STD_EPS)) * weights[j];
        if (z === z) out[i] += z;
      }
    }
  }
  for (let i = 0; i < n; i++) if (!scored[i]) out[i] = NaN;
  return out;
}

/** NaN-skipping mean of `count` values read from `start` every `stride`; NaN if all are missing. */
function stridedNanMean(values: ArrayLike<number>, start: number, count: number, stride: number): number {
  let sum = 0;
  let present = 0;
  for (let i = 0, at = start; i < count; i++, at += stride) {
    const v = values[at];
    if (v === v) {
      sum += v;
      present++;
    }
  }
  return sum / present;
}

/** NaN-skipping sample std (N-1) around `mean`, like TRL's nanstd; NaN with fewer than two values. */
function stridedNanStd(values: ArrayLike<number>, start: number, count: number, stride: number, mean: number): number {
  let squares = 0;
  let present = 0;
  for (let i = 0, at = start; i < count; i++, at += stride) {
    const v = values[at];
    if (v === v) {
      squares += (v - mean) * (v - mean);
      present++;
    }
  }
  return present > 1 ? Math.sqrt(squares / (present - 1)) : NaN;
}

/** A plain array copy; `Array.from` is several times slower on large typed arrays. */
function toArray(values: Float64Array): number[] {
  const out = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i];
  return out;
}

function isZero(std: number): boolean {
  return Math.abs(std) <= ZERO_STD_ATOL;
}

function countZeroGroups(stds: readonly number[]): number {
  let zero = 0;
  for (const s of stds) if (isZero(s)) zero++;
  return zero;
}
