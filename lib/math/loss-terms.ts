/**
 * The policy term of each loss type for one importance ratio w = exp(logRatio), with its
 * derivative. Kinks follow PyTorch's autograd: `clamp` passes the gradient at its bounds
 * (inclusive), `min` splits it equally between equal branches.
 */
import type { ResolvedLossConfig } from './loss-config.js';

/**
 * The clipped surrogate: writes -min(w'A, clip(w, low, high)A) to out[0] and its derivative with
 * respect to logRatio to out[1]; returns w' = min(w, delta), the ratio TRL's clip metrics test.
 */
export function clippedTerm(logRatio: number, a: number, s: ResolvedLossConfig, out: Float64Array): number {
  const w = Math.exp(logRatio);
  const clipped = w < s.low ? s.low : w > s.high ? s.high : w;
  const capped = w > s.delta ? s.delta : w;
  const unclippedLoss = capped * a;
  const clippedLoss = clipped * a;
  // d(w * A)/d logRatio = w * A, where the branch is not held constant by a clamp.
  const unclippedSlope = w > s.delta ? 0 : w * a;
  const clippedSlope = w >= s.low && w <= s.high ? w * a : 0;
  // `0 - x` rather than `-x`: a held-constant branch gives +0, not -0.
  if (unclippedLoss < clippedLoss) {
    out[0] = 0 - unclippedLoss;
    out[1] = 0 - unclippedSlope;
  } else if (unclippedLoss > clippedLoss) {
    out[0] = 0 - clippedLoss;
    out[1] = 0 - clippedSlope;
  } else {
    out[0] = 0 - unclippedLoss;
    out[1] = 0 - 0.5 * (unclippedSlope + clippedSlope);
  }
  return capped;
}

/**
 * SAPO's soft gate: -sigmoid(tau (w - 1)) * 4 / tau * A, tau by the sign of A (> 0: pos), and
 * its derivative in logRatio, -A * 4 sigma (1 - sigma) w.
 */
export function sapoTerm(logRatio: number, a: number, s: ResolvedLossConfig, out: Float64Array): void {
  const w = Math.exp(logRatio);
  const tau = a > 0 ? s.sapoTemperaturePos : s.sapoTemperatureNeg;
  const sigma = 1 / (1 + Math.exp(-(tau * (w - 1))));
  out[0] = -(((sigma * 4) / tau) * a);
  out[1] = -(a * 4 * sigma * (1 - sigma) * w);
}

const LOG_MIN = Math.log(1e-8);
const clamp = (x: number, lo: number, hi: number) => (x < lo ? lo : x > hi ? hi : x);

/**
 * VESPO's detached gamma weight of row i: phi(W) = exp(lambda + k log W - lambda W), W the
 * sequence ratio (clamped per-token log-ratios summed over active tokens, plus the clamped logs
 * of the per-token importance ratios over the whole row when a correction applies), log W
 * clamped into [log 1e-8, 20], k and lambda by the sign of the advantage (>= 0: pos).
 */
export function gammaWeight(
  logps: ArrayLike<number>,
  old: ArrayLike<number>,
  mask: Uint8Array,
  offset: number,
  t: number,
  isRatio: Float64Array | undefined,
  a: number,
  s: ResolvedLossConfig,
): number {
  let seq = 0;
  for (let j = 0; j < t; j++) if (mask[offset + j]) seq += clamp(logps[j] - old[j], -20, 20);
  if (isRatio) for (let j = 0; j < t; j++) seq += clamp(Math.log(isRatio[offset + j]), LOG_MIN, 20);
  const logW = clamp(seq, LOG_MIN, 20);
  const w = Math.exp(logW);
  const k = a >= 0 ? s.vespoKPos : s.vespoKNeg;
  const lambda = Math.max(a >= 0 ? s.vespoLambdaPos : s.vespoLambdaNeg, 1e-4);
  const phi = Math.exp(lambda + k * logW - lambda * w);
  return Number.isFinite(phi) ? phi : 0;
}
