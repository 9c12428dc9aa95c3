/**
 * Small float64 statistics with the NaN conventions of PyTorch / TRL: `nan*` functions skip NaN
 * entries (a missing reward), and an undefined statistic is NaN rather than a made-up 0.
 */

/** Arithmetic mean; NaN for an empty input. */
export function mean(values: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum / values.length;
}

/**
 * Standard deviation with `ddof` delta degrees of freedom: 1 (the default) is the sample std
 * (Bessel's correction, `torch.std`), 0 the population std (`numpy.std`). NaN when
 * `values.length <= ddof`.
 */
export function std(values: ArrayLike<number>, ddof = 1): number {
  const n = values.length;
  if (n <= ddof) return NaN;
  const m = mean(values);
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (values[i] - m) ** 2;
  return Math.sqrt(squares / (n - ddof));
}

/** Mean of the non-NaN entries (`torch.nanmean`); NaN when there are none. */
export function nanMean(values: ArrayLike<number>): number {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === v) {
      sum += v;
      count++;
    }
  }
  return sum / count;
}

/**
 * Sample std (N-1) of the non-NaN entries, TRL's `nanstd`; NaN when fewer than two are present.
 */
export function nanStd(values: ArrayLike<number>): number {
  const m = nanMean(values);
  let squares = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === v) {
      squares += (v - m) ** 2;
      count++;
    }
  }
  return count > 1 ? Math.sqrt(squares / (count - 1)) : NaN;
}

/** log(sum(exp(values))) without overflow; -Infinity for an empty input. */
export function logSumExp(values: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) if (values[i] > max) max = values[i];
  if (max === -Infinity || max === Infinity) return max;
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += Math.exp(values[i] - max);
  return max + Math.log(sum);
}

/** softmax(values / temperature), shifted by the maximum score so large weights cannot overflow. */
export function softmax(values: ArrayLike<number>, temperature = 1): number[] {
  const scores = Array.from(values, (v) => v / temperature);
  let max = -Infinity;
  for (const s of scores) if (s > max) max = s;
  let total = 0;
  for (let i = 0; i < scores.length; i++) {
    scores[i] = Math.exp(scores[i] - max);
    total += scores[i];
  }
  for (let i = 0; i < scores.length; i++) scores[i] /= total;
  return scores;
}
