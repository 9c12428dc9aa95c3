/**
 * Options of `gradientGrpo`, their defaults, and their validation into the serialisable
 * `GradientConfig` stored with the run (what a resume needs besides the policy and the rewards).
 * The defaults train the bundled tiny model on the token-level tasks in a dozen steps.
 */
import { InvalidInputError } from '../../errors.js';
import type { OnnxPolicy } from '../../policy/onnx/policy.js';
import type { GradientConfig } from './record.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import { resolveShape, type AdapterInit } from '../../grad/adapter.js';
import type { AdapterFile } from '../../grad/format.js';
import { resolveTrainingConfig, type TrainingRunOptions } from '../grpo-options.js';

/** The common handles; the policy is the model being trained, an ONNX policy loaded with `hiddenState: true`. */
export type GradientHandles = LoopHandles<OnnxPolicy>;

export interface GradientGrpoOptions extends GradientHandles, TrainingRunOptions {
  /** The adapter's rank (default 8) and scale (default 2). */
  adapter?: Omit<AdapterInit, 'seed'>;
  /** Start from a trained adapter (an adapter file, or its JSON text) instead of a fresh one. */
  initialAdapter?: AdapterFile | string;
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
