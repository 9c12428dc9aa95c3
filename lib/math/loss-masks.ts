/**
 * The detached factors TRL's `_compute_loss` multiplies into the policy term, each a constant
 * for the gradient: the sampling-mismatch importance ratio, the off-policy sequence mask and the
 * high-entropy token mask. Arrays are flat, row-major (row i, token j at i * t + j).
 */
import type { ResolvedLossConfig } from './loss-config.js';
import type { Rows } from './validate.js';

export interface ImportanceRatio {
  /** Per token (B * T) for the token modes, per row (B) for the sequence modes. */
  values: Float64Array;
  perToken: boolean;
}

/**
 * exp((old - sampling) * mask) per token, or of its row sum, then truncated into [clipMin,
 * clipMax] or zeroed outside it. Masked positions have a zero difference, so their token ratio
 * is exp(0) = 1 before the bounds (TRL computes it the same way; only vespo reads it there).
 */
export function importanceRatio(
  old: Rows,
  sampling: Rows,
  mask: Uint8Array,
  b: number,
  t: number,
  options: NonNullable<ResolvedLossConfig['importanceSampling']>,
): ImportanceRatio {
  const perToken = options.mode.startsWith('token');
  const values = new Float64Array(perToken ? b * t : b);
  for (let i = 0; i < b; i++) {
    const o = old[i];
    const s = sampling[i];
    let rowSum = 0;
    for (let j = 0; j < t; j++) {
      const diff = mask[i * t + j] ? o[j] - s[j] : 0;
      if (perToken) values[i * t + j] = Math.exp(diff);
      else rowSum += diff;
    }
    if (!perToken) values[i] = Math.exp(rowSum);
  }
  const { clipMin, clipMax } = options;
  const truncate = options.mode.endsWith('truncate');
  for (let k = 0; k < values.length; k++) {
    const r = values[k];
    if (truncate) values[k] = Math.min(Math.max(r, clipMin), clipMax);
    else if (r < clipMin || r > clipMax) values[k] = 0;
  }
  return { values, perToken };
}

/**
 * TRL's get_off_policy_mask: keep row i unless its advantage is negative and the mean over its
 * active tokens of (sampling - current) log-probs exceeds the threshold. 1 keeps, 0 drops.
 */
export function offPolicyKeep(
  advantages: ArrayLike<number>,
  logps: Rows,
  sampling: Rows,
  mask: Uint8Array,
  lengths: Float64Array,
  t: number,
  threshold: number,
): Uint8Array {
  const keep = new Uint8Array(advantages.length);
  for (let i = 0; i < keep.length; i++) {
    let sum = 0;
    for (let j = 0; j < t; j++) if (mask[i * t + j]) sum += sampling[i][j] - logps[i][j];
    const seqKl = sum / Math.max(lengths[i], 1);
    keep[i] = advantages[i] >= 0 || seqKl <= threshold ? 1 : 0;
  }
  return keep;
}

/**
 * TRL's get_high_entropy_mask with `threshold` = 1 - topEntropyQuantile: active tokens whose
 * entropy is >= torch.quantile(active entropies, threshold). TRL casts the entropies to float32
 * before the quantile (`.float()`), so the cut is computed in float32 here too, with
 * torch.quantile's linear interpolation; the comparison itself is in float64, as in TRL.
 */
export function highEntropyMask(entropies: Rows, mask: Uint8Array, b: number, t: number, threshold: number): Uint8Array {
  const out = new Uint8Array(b * t);
  const active: number[] = [];
  for (let i = 0; i < b; i++) for (let j = 0; j < t; j++) if (mask[i * t + j]) active.push(Math.fround(entropies[i][j]));
  if (active.length === 0) return out;
  const cut = quantileFloat32(Float32Array.from(active).sort(), threshold);
  for (let i = 0; i < b; i++) {
    for (let j = 0; j < t; j++) if (mask[i * t + j] && entropies[i][j] >= cut) out[i * t + j] = 1;
  }
  return out;
}

/** torch.quantile(x, q) for sorted float32 values, interpolation 'linear', float32 arithmetic. */
export function quantileFloat32(sorted: Float32Array, q: number): number {
  const f = Math.fround;
  const rank = f(f(q) * f(sorted.length - 1));
  const lo = Math.trunc(rank);
  const hi = Math.ceil(rank);
  const weight = f(rank - lo);
  const a = sorted[lo];
  const span = f(sorted[hi] - a);
  // at::lerp: the branch on |weight| < 0.5 keeps the result exact at both ends.
  return Math.abs(weight) < 0.5 ? f(a + f(weight * span)) : f(sorted[hi] - f(span * f(1 - weight)));
}
