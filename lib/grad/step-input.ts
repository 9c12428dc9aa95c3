/**
 * What both GRPO trainers (the head adapter's and LoRA's) check before an update, and the loss
 * configuration the update runs with: the batch's shape against the config, one prompt per
 * group, the log-probs a sampling correction needs, the truncation flags masking needs, and the
 * entropy coefficient of this step (fixed, or the adaptive one's current value).
 */
import { InvalidInputError } from '../errors.js';
import { appliedEntropyCoef, type AdaptiveEntropyState, type ResolvedAdaptiveEntropy } from '../math/adaptive-entropy.js';
import { GroupRolloutBatch } from '../math/batch.js';
import type { GrpoLossConfig } from '../math/loss.js';
import { samplingCorrection, type SamplingSettings } from '../math/sampling-correction.js';

export interface StepSettings {
  numGenerations: number;
  temperature: number;
  loss: GrpoLossConfig;
  maskTruncated: boolean;
  adaptive: ResolvedAdaptiveEntropy | undefined;
  entropyState: AdaptiveEntropyState;
}

/** The parts of a step's options checked here. */
export interface StepInputOptions {
  sampling?: SamplingSettings;
  samplingLogprobs?: unknown;
  truncated?: unknown;
}

/** Throws InvalidInputError for input the update cannot use; returns the step's loss configuration. */
export function stepLossConfig(batch: unknown, prompts: unknown, options: StepInputOptions, s: StepSettings): GrpoLossConfig {
  if (!(batch instanceof GroupRolloutBatch)) throw new InvalidInputError('batch', 'must be a GroupRolloutBatch.');
  if (batch.groupSize !== s.numGenerations) {
    throw new InvalidInputError('batch', `has groups of ${batch.groupSize}, but the config's numGenerations is ${s.numGenerations}.`);
  }
  if (!Array.isArray(prompts) || prompts.length !== batch.numGroups) {
    throw new InvalidInputError('prompts', `must hold one prompt per group (${batch.numGroups}), got ${Array.isArray(prompts) ? prompts.length : typeof prompts}.`);
  }
  const correction = samplingCorrection(options.sampling, s.temperature, s.loss.importanceSampling);
  if (correction && !options.samplingLogprobs) {
    throw new InvalidInputError(
      'samplingLogprobs',
      `are needed for the '${correction.mode}' sampling correction (the rollouts were sampled with a filter or at another temperature); pass the completions' sampledLogprobs, or set loss.importanceSampling to null.`,
    );
  }
  if (s.maskTruncated && !options.truncated) {
    throw new InvalidInputError('truncated', "is needed with maskTruncatedCompletions: one flag per completion, true where its finishReason is 'length'.");
  }
  const entropyCoef = s.adaptive ? appliedEntropyCoef(s.entropyState, s.adaptive) : (s.loss.entropyCoef ?? 0);
  return { ...s.loss, importanceSampling: correction ?? null, entropyCoef };
}
