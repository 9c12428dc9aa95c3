/**
 * DAPO's dynamic sampling (Yu et al. 2025, "DAPO", section 3.2): a group whose rewards all equal
 * has zero advantages, so it only dilutes the update. DAPO over-samples prompts and keeps those
 * with 0 < accuracy < 1 until the batch is full; verl's `filter_groups` and ms-swift's
 * `dynamic_sample` do the same with a bound on the generation batches (`max_num_gen_batches`,
 * `max_resample_times`). TRL has no such option (its open request proposes resampling a flat
 * group's completions until their rewards differ, at most `max_num_samplings` times). Here the
 * batch is the schedule's: a flat group is sampled again from fresh seeds, at most
 * `maxResamples` times, and a group still flat is left out of the update (its rollouts are
 * stored with zero advantages). Every sampling draws from seeds derived from the run's, so a
 * resumed run resamples exactly as an uninterrupted one.
 */
import { InvalidInputError } from '../errors.js';
import type { DynamicSamplingConfig } from '../store/records/index.js';
import { integer } from './options.js';

export interface DynamicSamplingOptions {
  /** Extra samplings of a flat group before it is dropped; 0 drops flat groups without resampling. Default 3. */
  maxResamples?: number;
}

export const DYNAMIC_SAMPLING_DEFAULTS = { maxResamples: 3 };

/** The stored form of the option: undefined (off), or its bound. `true` takes the defaults. */
export function resolveDynamicSampling(options: DynamicSamplingOptions | boolean | undefined): DynamicSamplingConfig | undefined {
  if (options === undefined || options === false) return undefined;
  if (options === true) return { ...DYNAMIC_SAMPLING_DEFAULTS };
  if (options === null || typeof options !== 'object') throw new InvalidInputError('dynamicSampling', 'expected true, false or { maxResamples? }.');
  return { maxResamples: integer(options.maxResamples, 'dynamicSampling.maxResamples', DYNAMIC_SAMPLING_DEFAULTS.maxResamples, 0, 64) };
}

/** Whether a group's combined rewards carry no signal: fewer than two scorable, or all equal. */
export function isFlat(rewards: ReadonlyArray<number | null>): boolean {
  const scorable = rewards.filter((r): r is number => r !== null && !Number.isNaN(r));
  return scorable.length < 2 || scorable.every((r) => r === scorable[0]);
}
