/**
 * TRL's adaptive entropy control (`use_adaptive_entropy`, after Skywork-OR1): the entropy bonus
 * is applied only while the last step's mean entropy of the trained tokens was at or below
 * `target`, and after each optimizer step the coefficient moves by `delta` toward more bonus
 * when entropy is at or below the target, less when above, within [min, max].
 */
import { InvalidInputError } from '../errors.js';
import { finiteNumber } from './validate.js';

export interface AdaptiveEntropyOptions {
  /** Target mean per-token entropy in nats (`entropy_target`); default 0.2. */
  target?: number;
  /** Step of the coefficient per optimizer step (`entropy_coef_delta`); default 0.005. */
  delta?: number;
  /** Lower bound of the coefficient (`entropy_coef_min`); default 0. */
  min?: number;
  /** Upper bound of the coefficient (`entropy_coef_max`); default 1. */
  max?: number;
}

export interface ResolvedAdaptiveEntropy {
  target: number;
  delta: number;
  min: number;
  max: number;
}

/** The controller's state: the coefficient, and the entropy measured at the last step (none yet). */
export interface AdaptiveEntropyState {
  coef: number;
  lastEntropy?: number;
}

/** The controller's settings with TRL's defaults filled in (target 0.2, delta 0.005), checked: a bad one is an `InvalidInputError`. */
export function resolveAdaptiveEntropy(options: AdaptiveEntropyOptions): ResolvedAdaptiveEntropy {
  if (options === null || typeof options !== 'object') {
    throw new InvalidInputError('adaptiveEntropy', 'must be { target?, delta?, min?, max? }.');
  }
  const target = finiteNumber('adaptiveEntropy.target', options.target ?? 0.2);
  const delta = finiteNumber('adaptiveEntropy.delta', options.delta ?? 0.005, { min: 0 });
  const min = finiteNumber('adaptiveEntropy.min', options.min ?? 0);
  const max = finiteNumber('adaptiveEntropy.max', options.max ?? 1);
  if (min > max) throw new InvalidInputError('adaptiveEntropy.min', `(${min}) must not exceed max (${max}).`);
  return { target, delta, min, max };
}

/**
 * The coefficient this step's loss uses: the current one once the last step's entropy was at or
 * below the target, else 0 (also before any measurement: TRL documents its default target as
 * never triggering the bonus short of an entropy collapse).
 */
export function appliedEntropyCoef(state: AdaptiveEntropyState, options: ResolvedAdaptiveEntropy): number {
  return state.lastEntropy !== undefined && state.lastEntropy <= options.target ? state.coef : 0;
}

/** The state after an optimizer step whose trained tokens had mean entropy `entropy`. */
export function nextAdaptiveEntropy(state: AdaptiveEntropyState, entropy: number, options: ResolvedAdaptiveEntropy): AdaptiveEntropyState {
  const coef = entropy <= options.target ? Math.min(state.coef + options.delta, options.max) : Math.max(state.coef - options.delta, options.min);
  return { coef, lastEntropy: entropy };
}
