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

export interface RefLossInput {
  logps: Matrix;
  oldLogps?: Matrix;
  refLogps?: Matrix;
  advantages: number[];
  mask: Matrix;
  entropies?: Matrix;
}
export interface RefLossConfig {
  lossType?: 'grpo' | 'bnpo' | 'dr_grpo' | 'dapo';
  epsilon?: number;
  epsilonHigh?: number;
  delta?: number;
  beta?: number;
  importanceSamplingLevel?: 'token' | 'sequence';
  maxCompletionLength?: number;
  entropyCoef?: number;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const times = (a: Matrix, b: Matrix): Matrix => a.map((row, i) => row.map((x, t) => x * b[i][t]));

/** GRPOTrainer._compute_loss on nested arrays. Returns the loss and the logged clip metrics. */
export function refLoss(x: RefLossInput, c: RefLossConfig = {}) {
  const epsLow = c.epsilon ?? 0.2;
  const epsHigh = c.epsilonHigh ?? epsLow;
  const beta = c.beta ?? 0;
  const B = x.logps.length;
  const T = x.logps[0].length;
  const old = x.oldLogps ?? x.logps;
  const mask = x.mask;
  const A = x.advantages.map((a) => [a]); // (B, 1)
  const logRatio = x.logps.map((row, i) => row.map((lp, t) => lp - old[i][t]));
  // (B, T) at token level, (B, 1) at sequence level.
  const logW: Matrix =
    c.importanceSamplingLevel === 'sequence'
      ? logRatio.map((row, i) => [sum(row.map((v, t) => v * mask[i][t])) / Math.max(sum(mask[i]), 1)])
      : logRatio;
  let coef1 = logW.map((row) => row.map(Math.exp));
  const coef2 = coef1.map((row) => row.map((w) => Math.min(Math.max(w, 1 - epsLow), 1 + epsHigh)));
  if (c.delta !== undefined) coef1 = coef1.map((row) => row.map((w) => Math.min(w, c.delta!)));
  let perToken: Matrix = coef1.map((row, i) => row.map((w, t) => -Math.min(w * A[i][0], coef2[i][t] * A[i][0])));
  // Broadcast (B, 1) to (B, T) the way `+ beta * per_token_kl` and `* mask` do.
  perToken = Array.from({ length: B }, (_, i) => Array.from({ length: T }, (_, t) => perToken[i][perToken[i].length === 1 ? 0 : t]));
  let kl: Matrix | undefined;
  if (beta !== 0) {
    kl = x.logps.map((row, i) => row.map((lp, t) => Math.exp(x.refLogps![i][t] - lp) - (x.refLogps![i][t] - lp) - 1));
    perToken = perToken.map((row, i) => row.map((v, t) => v + beta * kl![i][t]));
  }
  const masked = times(perToken, mask);
  const maskSum = sum(mask.map(sum));
  let loss: number;
  switch (c.lossType ?? 'dapo') {
    case 'grpo':
      loss = sum(masked.map((row, i) => sum(row) / Math.max(sum(mask[i]), 1))) / B;
      break;
    case 'bnpo':
    case 'dapo':
      loss = sum(masked.map(sum)) / Math.max(maskSum, 1);
      break;
    case 'dr_grpo':
      loss = sum(masked.map(sum)) / (B * c.maxCompletionLength!);
      break;
  }
  if (c.entropyCoef) loss -= c.entropyCoef * (sum(times(x.entropies!, mask).map(sum)) / Math.max(maskSum, 1));

  const globalMaskedMean = (m: Matrix) =>
    m[0].length === 1 ? sum(m.map((r) => r[0])) / m.length : sum(times(m, mask).map(sum)) / Math.max(maskSum, 1);
  const low = coef1.map((row, i) => row.map((w) => (w < 1 - epsLow && A[i][0] < 0 ? 1 : 0)));
  const high = coef1.map((row, i) => row.map((w) => (w > 1 + epsHigh && A[i][0] > 0 ? 1 : 0)));
  const region = low.map((row, i) => row.map((v, t) => (v || high[i][t] ? 1 : 0)));
  return {
    loss,
    clipRatioLow: globalMaskedMean(low),
    clipRatioHigh: globalMaskedMean(high),
    clipRatioRegion: globalMaskedMean(region),
    kl: kl ? globalMaskedMean(kl) : undefined,
  };
}

/** log_softmax and entropy of one row of logits / temperature, by the textbook formulas. */
export function refLogSoftmax(logits: number[], id: number, temperature = 1) {
  const z = logits.map((v) => v / temperature);
  const m = Math.max(...z);
  const lse = m + Math.log(sum(z.map((v) => Math.exp(v - m))));
  const logp = z.map((v) => v - lse);
  return { logp: logp[id], entropy: -sum(logp.map((l) => (l === -Infinity ? 0 : Math.exp(l) * l))) };
}
