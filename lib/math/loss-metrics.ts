/**
 * The metrics `grpoLoss` reports, as TRL's `_compute_loss` logs them for one micro-batch on one
 * process, and the counters behind the clip ratios.
 */
import type { ResolvedLossConfig } from './loss-config.js';

export interface RatioSummary {
  min: number;
  mean: number;
  max: number;
}

export interface GrpoLossMetrics {
  /**
   * Share of ratios below 1 - epsilon with a negative advantage: a fraction of the active tokens
   * at token level, of the B rows at sequence level (TRL's `clip_ratio/low_mean`). Logged by the
   * clipped types (grpo, bnpo, dr_grpo, dapo, luspo), as the next four.
   */
  clipRatioLow?: number;
  /** Same for ratios above 1 + epsilonHigh with a positive advantage (`clip_ratio/high_mean`). */
  clipRatioHigh?: number;
  /** Either of the two (`clip_ratio/region_mean`). */
  clipRatioRegion?: number;
  /** The smallest per-row share of low-clipped tokens (`clip_ratio/low_min`; NaN if no row has tokens). */
  clipRatioLowMin?: number;
  /** The largest per-row share of high-clipped tokens (`clip_ratio/high_max`). */
  clipRatioHighMax?: number;
  /** cispo: share of ratios above epsilonHigh with a positive advantage (`cispo_clip_ratio`). */
  cispoClipRatio?: number;
  /** vespo: mean gamma weight over the rows (`vespo/phi_seq_mean`). */
  vespoPhiMean?: number;
  /** Mask-mean of the KL term (after the bias correction); present when beta is not 0. */
  kl?: number;
  /** Mask-mean of the entropies; present when entropies were given. */
  entropy?: number;
  /** Mean entropy of the tokens the entropy bonus acts on (the adaptive controller's measure). */
  trainedEntropy?: number;
  /** The loss before the entropy bonus; present when entropyCoef is not 0 (`policy_loss`). */
  policyLoss?: number;
  /** The importance ratios after their bounds: over active tokens (token modes) or rows (sequence modes). */
  importanceSamplingRatio?: RatioSummary;
  /** |oldLogps - samplingLogps| over active tokens (`sampling/sampling_logp_difference`). */
  samplingLogpDifference?: { mean: number; max: number };
}

/** Min, mean and max of the values (those the mask keeps, when given); all 0 when there are none. */
export function summarize(values: Float64Array, mask: Uint8Array | undefined): RatioSummary {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let count = 0;
  for (let k = 0; k < values.length; k++) {
    if (mask && !mask[k]) continue;
    const v = values[k];
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    count++;
  }
  return count ? { min, mean: sum / count, max } : { min: 0, mean: 0, max: 0 };
}

/**
 * TRL's clip flags: per active token (j >= 0) at token level, per row (j = -1) at sequence level,
 * testing the ratio after the delta cap and the sign of the advantage.
 */
export class Tally {
  readonly low: Float64Array;
  readonly high: Float64Array;
  low0 = 0;
  high0 = 0;
  region = 0;
  cispo0 = 0;

  constructor(
    readonly b: number,
    readonly sequence: boolean,
  ) {
    this.low = new Float64Array(b);
    this.high = new Float64Array(b);
  }

  clip(i: number, ratio: number, a: number, s: ResolvedLossConfig): void {
    const isLow = ratio < s.low && a < 0;
    const isHigh = ratio > s.high && a > 0;
    if (isLow) {
      this.low0++;
      this.low[i]++;
    }
    if (isHigh) {
      this.high0++;
      this.high[i]++;
    }
    if (isLow || isHigh) this.region++;
  }

  cispo(ratio: number, a: number, s: ResolvedLossConfig): void {
    if (ratio > s.epsilonHigh && a > 0) this.cispo0++;
  }

  /** global_masked_mean over active tokens (token level) or rows; per-row shares for low_min / high_max. */
  clipMetrics(lengths: Float64Array, activeOr1: number): GrpoLossMetrics {
    const d = this.sequence ? this.b : activeOr1;
    let lowMin = NaN;
    let highMax = NaN;
    for (let i = 0; i < this.b; i++) {
      // masked_seq_mean: 0 / 0 for a row without tokens is NaN, which nanmin / nanmax skip.
      const low = this.sequence ? this.low[i] : this.low[i] / lengths[i];
      const high = this.sequence ? this.high[i] : this.high[i] / lengths[i];
      if (!Number.isNaN(low) && !(low >= lowMin)) lowMin = low;
      if (!Number.isNaN(high) && !(high <= highMax)) highMax = high;
    }
    return {
      clipRatioLow: this.low0 / d,
      clipRatioHigh: this.high0 / d,
      clipRatioRegion: this.region / d,
      clipRatioLowMin: lowMin,
      clipRatioHighMax: highMax,
    };
  }

  cispoRatio(activeOr1: number): number {
    return this.cispo0 / (this.sequence ? this.b : activeOr1);
  }
}

