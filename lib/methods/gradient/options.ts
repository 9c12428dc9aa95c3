/**
 * Options of `gradientGrpo`, their defaults, and their validation into the serialisable
 * `GradientConfig` stored with the run (what a resume needs besides the policy and the rewards).
 * The defaults train the bundled tiny model on the token-level tasks in a dozen steps.
 */
import { InvalidInputError } from '../../errors.js';
import type { OnnxPolicy } from '../../policy/onnx/policy.js';
import type { GradientConfig } from '../../store/records.js';
import type { DatasetItem } from '../../core/dataset.js';
import { validateHandles, type GroupSamplingOptions, type LoopHandles } from '../../run/options.js';
import { resolveShape, type AdapterInit } from '../../grad/adapter.js';
import type { AdapterFile } from '../../grad/format.js';
import type { OptimizerOptions } from '../../grad/optimizer.js';
import type { EvaluationOption } from '../../run/held-out.js';
import { resolveTrainingConfig, type GradientLossOptions } from '../grpo-options.js';
import type { DynamicSamplingOptions } from '../../run/dynamic-sampling.js';

/** The common handles; the policy is the model being trained, an ONNX policy loaded with `hiddenState: true`. */
export type GradientHandles = LoopHandles<OnnxPolicy>;

export interface GradientGrpoOptions extends GradientHandles, GroupSamplingOptions, EvaluationOption {
  dataset: DatasetItem[];
  /** Completions per item; default 8. */
  groupSize?: number;
  /** Passes over the dataset; default 1. */
  epochs?: number;
  /** Items per step (one generation batch, one or more updates); default 2. */
  batchSize?: number;
  /** Optimizer updates per generation batch; default 1. */
  numIterations?: number;
  /** Sampling temperature (log-probs are of softmax(z / T)); default 1. */
  temperature?: number;
  /** Seed of the epoch order, every sampling call and a new adapter's A; default 0. */
  seed?: number;
  loss?: GradientLossOptions;
  optimizer?: OptimizerOptions;
  /** The adapter's rank (default 8) and scale (default 2). */
  adapter?: Omit<AdapterInit, 'seed'>;
  /** Start from a trained adapter (an adapter file, or its JSON text) instead of a fresh one. */
  initialAdapter?: AdapterFile | string;
  /** DAPO's dynamic sampling: flat groups sampled again, then left out of the update (`true`: at most 3 resamplings). Default off. */
  dynamicSampling?: DynamicSamplingOptions | boolean;
  /** Name of the built-in task the dataset came from (recorded with the run). */
  task?: string;
  /** Id of the new run. Default: a random UUID. */
  runId?: string;
}

export function validateGradientHandles(handles: GradientHandles): void {
  validateHandles(handles);
  if (!handles.policy.head) {
    throw new InvalidInputError('policy', 'has no trainable head; load it with loadOnnxPolicy({ model, hiddenState: true }).');
  }
}

export function resolveGradientConfig(options: GradientGrpoOptions): GradientConfig {
  validateGradientHandles(options);
  const head = options.policy.head!;
  const config = resolveTrainingConfig(options);
  const shape = resolveShape(head.hiddenSize, head.vocabSize, options.adapter);
  // A new adapter's A is drawn from the run's seed.
  return { ...config, adapter: { rank: shape.rank, scale: shape.scale, seed: config.seed, hiddenSize: shape.hiddenSize, vocabSize: shape.vocabSize } };
}
