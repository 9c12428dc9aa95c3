/**
 * Options of `loraGrpo`, their defaults, and their validation into the serialisable
 * `LoraRunConfig` stored with the run. The objective, schedule, sampling and optimizer are the
 * gradient method's (every grpoLoss option); what differs is the adapter: PEFT's LoRA settings on
 * the attention and MLP projections of every layer, and a smaller default learning rate.
 */
import { InvalidInputError } from '../../errors.js';
import { resolveLoraConfig, type LoraAdapter, type LoraOptions } from '../../lora/adapter.js';
import type { LoraAdapterFile } from '../../lora/format.js';
import type { LoraModule } from '../../lora/weights.js';
import type { Policy, PromptInput } from '../../policy/types.js';
import type { DatasetItem, LoraRunConfig } from '../../store/records.js';
import { validateHandles, type GroupSamplingOptions, type LoopHandles } from '../../run/options.js';
import type { EvaluationOption } from '../../run/held-out.js';
import type { ModelGraph } from '../../policy/onnx/model-graph.js';
import type { GradientLossOptions } from '../gradient/options.js';
import { resolveTrainingConfig } from '../gradient/options.js';
import type { OptimizerOptions } from '../../grad/optimizer.js';

/**
 * The policy a LoRA run trains: it samples, and its weights are replaced by the adapted model's
 * after every update (an `OnnxPolicy` from `loadOnnxPolicy`, fp32 or fp16 weights).
 */
export interface LoraPolicy extends Policy {
  modelGraph(): Promise<ModelGraph>;
  replaceGraph(graph: Uint8Array): Promise<void>;
  promptIds(input: PromptInput): number[];
}

export type LoraHandles = LoopHandles<LoraPolicy>;

export interface LoraGrpoOptions extends LoraHandles, GroupSamplingOptions, EvaluationOption {
  dataset: DatasetItem[];
  /** Completions per item; default 8. */
  groupSize?: number;
  /** Passes over the dataset; default 1. */
  epochs?: number;
  /** Items per step; default 2. */
  batchSize?: number;
  /** Optimizer updates per generation batch; default 1. */
  numIterations?: number;
  /** Sampling temperature (log-probs are of softmax(z / T)); default 1. */
  temperature?: number;
  /** Seed of the epoch order, every sampling call and a new adapter's A; default 0. */
  seed?: number;
  /** The objective, as the gradient method's (every grpoLoss option). */
  loss?: GradientLossOptions;
  /** AdamW; the learning rate defaults to 2e-3 (LORA_GRPO_DEFAULTS.lr). */
  optimizer?: OptimizerOptions;
  /** Rank (default 8), alpha (default 16), target modules (default all seven), rsLoRA. */
  lora?: Omit<LoraOptions, 'seed'>;
  /** Start from a trained adapter (a LoRA adapter file or its JSON text, or `importPeftAdapter`'s adapter) instead of a fresh one. */
  initialAdapter?: LoraAdapter | LoraAdapterFile | string;
  /** Name of the built-in task the dataset came from (recorded with the run). */
  task?: string;
  /** Id of the new run. Default: a random UUID. */
  runId?: string;
}

export const LORA_GRPO_DEFAULTS = { lr: 2e-3 } as const;

export function validateLoraHandles(handles: LoraHandles): void {
  validateHandles(handles);
  const { policy } = handles;
  for (const name of ['modelGraph', 'replaceGraph', 'promptIds'] as const) {
    if (typeof policy[name] !== 'function') {
      throw new InvalidInputError('policy', `has no ${name}(); a LoRA run trains an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx).`);
    }
  }
}

export function resolveLoraRunConfig(options: LoraGrpoOptions): LoraRunConfig {
  validateLoraHandles(options);
  const config = resolveTrainingConfig(options, LORA_GRPO_DEFAULTS.lr);
  const lora = options.lora ?? {};
  if (lora === null || typeof lora !== 'object') throw new InvalidInputError('lora', 'must be an object { r?, alpha?, targetModules?, useRslora? }.');
  const { r, alpha, targetModules, useRslora } = resolveLoraConfig(lora);
  return { ...config, lora: { r, alpha, useRslora, targetModules: [...targetModules] as LoraModule[], seed: config.seed } };
}
