/**
 * Whether a trainer should correct for sampling mismatch, and how: when rollouts were drawn with
 * a top-k / top-p / min-p filter or at another temperature than the trainer scores with, the
 * tokens came from another distribution than the one the loss's ratios assume, which is the
 * mismatch TRL's vLLM importance-sampling correction exists for. TRL applies it by default
 * (`vllm_importance_sampling_correction=True`, mode 'sequence_mask', clip max 3).
 */
import { InvalidInputError } from '../errors.js';
import type { ImportanceSamplingOptions } from './loss-config.js';

/** How rollouts were sampled (the options of `generateGroup`). */
export interface SamplingSettings {
  temperature?: number;
  /** 0 or absent: no top-k filter. */
  topK?: number;
  /** 1 or absent: no nucleus filter. */
  topP?: number;
  /** 0 or absent: no min-p filter. */
  minP?: number;
}

/** TRL's default correction. */
export const DEFAULT_IMPORTANCE_SAMPLING: Readonly<ImportanceSamplingOptions> = Object.freeze({ mode: 'sequence_mask', clipMax: 3 });

/** True when tokens sampled with `sampling` were not drawn from softmax(z / scoringTemperature). */
export function samplingMismatch(sampling: SamplingSettings, scoringTemperature: number): boolean {
  if (sampling === null || typeof sampling !== 'object') {
    throw new InvalidInputError('sampling', 'must be { temperature?, topK?, topP?, minP? }.');
  }
  const { temperature = 1, topK = 0, topP = 1, minP = 0 } = sampling;
  return topK > 0 || topP < 1 || minP > 0 || temperature !== scoringTemperature;
}

/**
 * The correction a trainer applies: the user's choice when given (null: none), else TRL's
 * default when the sampling does not match the scoring distribution, else none.
 */
export function samplingCorrection(
  sampling: SamplingSettings | undefined,
  scoringTemperature: number,
  chosen?: ImportanceSamplingOptions | null,
): ImportanceSamplingOptions | undefined {
  if (chosen === null) return undefined;
  if (chosen !== undefined) return chosen;
  return sampling && samplingMismatch(sampling, scoringTemperature) ? { ...DEFAULT_IMPORTANCE_SAMPLING } : undefined;
}
