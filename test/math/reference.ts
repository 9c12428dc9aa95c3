/**
 * An independent float64 transcription of TRL's tensor formulas onto nested arrays, written to be
 * obviously correct rather than fast: whole-matrix steps in the order grpo_trainer.py applies
 * them (broadcast, clamp, min, multiply by the mask, reduce). It shares no code with lib/math.
 */
type Matrix = number[][];

const nansum = (xs: number[]): number => xs.filter((x) => !Number.isNaN(x)).reduce((a, b) => a + b, 0);
const nanmean = (xs: number[]): number => {
  const kept = xs.filter((x) => !Number.isNaN(x));
  return kept.reduce((a, b) => a + b, 0) / kept.length;
};
/** trl.trainer.utils.nanstd: nanmean of squared deviations times count / (count - 1). */
const nanstd = (xs: number[]): number => {
  const m = nanmean(xs);
  const count = xs.filter((x) => !Number.isNaN(x)).length;
  const variance = nanmean(xs.map((x) => (x - m) ** 2));
  return count > 1 ? Math.sqrt(variance * (count / (count - 1))) : NaN;
};
const chunk = <T>(xs: T[], size: number): T[][] =>
  Array.from({ length: xs.length / size }, (_, g) => xs.slice(g * size, (g + 1) * size));
const isclose0 = (x: number): boolean => Math.abs(x) <= 1e-8;

export interface RefAdvantageOptions {
  groupSize: number;
  weights?: number[];
  scaleRewards?: 'group' | 'batch' | 'none';
  aggregation?: 'sum_then_normalize' | 'normalize_then_sum';
  estimator?: 'grpo' | 'rloo';
}

export function refAdvantages(rewardsPerFunc: (number | null)[][], o: RefAdvantageOptions) {
  const g = o.groupSize;
  const table: Matrix = rewardsPerFunc.map((row) => row.map((x) => (x === null ? NaN : x)));
  const k = table[0].length;
  const weights = o.weights ?? new Array(k).fill(1);
  const unscorable = table.map((row) => row.every(Number.isNaN));
  const weighted = (m: Matrix) => m.map((row, i) => (unscorable[i] ? NaN : nansum(row.map((x, j) => x * weights[j]))));
  const rewards = weighted(table);
  let advantages: number[];
  let stdRewards: number[];
  if (o.estimator === 'rloo') {
    stdRewards = chunk(rewards, g).flatMap((grp) => grp.map(() => nanstd(grp)));
    advantages = chunk(rewards, g).flatMap((grp) => {
      const count = grp.filter((x) => !Number.isNaN(x)).length;
      const total = nansum(grp);
      return grp.map((r) => r - (total - r) / (count - 1));
    });
  } else if ((o.aggregation ?? 'sum_then_normalize') === 'sum_then_normalize') {
    const means = chunk(rewards, g).flatMap((grp) => grp.map(() => nanmean(grp)));
    const scale = o.scaleRewards ?? 'group';
    stdRewards =
      scale === 'batch' ? rewards.map(() => nanstd(rewards)) : chunk(rewards, g).flatMap((grp) => grp.map(() => nanstd(grp)));
    advantages = rewards.map((r, i) => r - means[i]);
    if (scale !== 'none') advantages = advantages.map((a, i) => a / (stdRewards[i] + 1e-4));
  } else {
    const normalizedTable: Matrix = table.map((row) => row.slice());
    for (let j = 0; j < k; j++) {
      chunk(table.map((row) => row[j]), g).forEach((grp, gi) => {
        const m = nanmean(grp);
        const s = nanstd(grp);
        grp.forEach((x, r) => (normalizedTable[gi * g + r][j] = (x - m) / (s + 1e-4)));
      });
    }
    const combined = weighted(normalizedTable);
    stdRewards = combined.map(() => nanstd(combined));
    advantages = combined.map((r, i) => (r - nanmean(combined)) / (stdRewards[i] + 1e-4));
  }
  return {
    advantages: advantages.map((a) => (Number.isNaN(a) ? 0 : a)),
    rewards,
    fracRewardZeroStd: stdRewards.filter(isclose0).length / stdRewards.length,
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** log_softmax and entropy of one row of logits / temperature, by the textbook formulas. */
export function refLogSoftmax(logits: number[], id: number, temperature = 1) {
  const z = logits.map((v) => v / temperature);
  const m = Math.max(...z);
  const lse = m + Math.log(sum(z.map((v) => Math.exp(v - m))));
  const logp = z.map((v) => v - lse);
  return { logp: logp[id], entropy: -sum(logp.map((l) => (l === -Infinity ? 0 : Math.exp(l) * l))) };
}
