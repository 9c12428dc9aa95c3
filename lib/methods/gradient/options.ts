/**
 * Options of `gradientGrpo`: the objective, schedule, sampling and optimizer every gradient run
 * takes (training-options.ts), and which adapter it trains with that adapter's own options: the
 * head adapter (`adapter: 'head'`, the default) or full-depth LoRA (`adapter: 'lora'`, lora.ts).
 * Each is validated into the serialisable config stored with the run.
 */
import { InvalidInputError } from '../../errors.js';
import type { TrainableHead } from '../../policy/onnx/head.js';
import type { TrainablePolicy } from '../../train/trainable-policy.js';
import type { GradientConfig } from './record.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import { resolveShape, type AdapterInit } from '../../train/head/adapter.js';
import type { AdapterFile } from '../../train/head/format.js';
import { resolveTrainingConfig, type TrainingRunOptions } from './training-options.js';

/**
 * The common handles; the policy is the model being trained, an ONNX policy loaded with
 * `hiddenState: true`. It names its `head` (OnnxPolicy does, as undefined without hidden states):
 * that is how resumeGradientGrpo's overloads tell a head run's handles from a LoRA run's.
 */
export type GradientHandles = LoopHandles<TrainablePolicy & { readonly head: TrainableHead | undefined }>;

/**
 * `gradientGrpo`'s options for a run that trains a low-rank adapter on the policy's LM head
 * (z' = z + s (h A) B), the default; with `adapter: 'lora'` it takes `LoraGrpoOptions`.
 */
export interface GradientGrpoOptions extends GradientHandles, TrainingRunOptions {
  /** The adapter the run trains: 'head' (this one, the default) or 'lora' (LoraGrpoOptions). */
  adapter?: 'head';
  /** The head adapter's rank (default 8) and scale (default 2). */
  head?: Omit<AdapterInit, 'seed'>;
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
  if (options.adapter !== undefined && options.adapter !== 'head') {
    throw new InvalidInputError('adapter', `expected 'head' or 'lora', got ${JSON.stringify(options.adapter)} (the head adapter's rank and scale go in head: { rank, scale }).`);
  }
  const head = options.policy.head!;
  const config = resolveTrainingConfig(options);
  const shape = resolveShape(head.hiddenSize, head.vocabSize, options.head);
  // A new adapter's A is drawn from the run's seed.
  return { ...config, adapter: { rank: shape.rank, scale: shape.scale, seed: config.seed, hiddenSize: shape.hiddenSize, vocabSize: shape.vocabSize } };
}
