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
import type { Policy, PromptInput } from '../../core/policy.js';
import type { LoraRunConfig } from '../../store/records.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import type { ModelGraph } from '../../policy/onnx/graph.js';
import type { FollowedAdapter } from '../../policy/onnx/follow-adapter.js';
import { resolveTrainingConfig, type TrainingRunOptions } from '../grpo-options.js';

/**
 * The policy a LoRA run trains: it samples, and after every update it follows the adapter by
 * taking A and B as graph inputs (`followAdapter`). An `OnnxPolicy` from `loadOnnxPolicy`.
 */
export interface LoraPolicy extends Policy {
  modelGraph(): Promise<ModelGraph>;
  replaceGraph(graph: Uint8Array): Promise<void>;
  promptIds(input: PromptInput): number[];
  /** Samples and scores under the adapter's A and B as graph inputs, with no merge. */
  followAdapter?(adapter: FollowedAdapter): Promise<void>;
}

/**
 * Where a run's forward and backward run: onnxruntime's own kernels (the training graphs of
 * lib/train/graph in the policy's onnxruntime, on its backend: Node CPU, WASM or WebGPU).
 */
export type LoraEngine = 'onnxruntime';

export type LoraHandles = LoopHandles<LoraPolicy>;

export interface LoraGrpoOptions extends LoraHandles, TrainingRunOptions {
  /** Rank (default 8), alpha (default 16), target modules (default all seven), rsLoRA. */
  lora?: Omit<LoraOptions, 'seed'>;
  /**
   * Where the forward and backward run: 'onnxruntime' (also what 'auto', the default, means): the
   * training graphs in the policy's own onnxruntime, on its backend, and the sampler follows the
   * adapter as graph inputs (`followAdapter`: no merge, no new session). Stored with the run; runs
   * stored by the removed 'cpu' and 'webgpu' engines resume on it (their A, B and AdamW moments are
   * the same tensors).
   */
  engine?: LoraEngine | 'auto';
  /** Start from a trained adapter (a LoRA adapter file or its JSON text, or `importPeftAdapter`'s adapter) instead of a fresh one. */
  initialAdapter?: LoraAdapter | LoraAdapterFile | string;
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
  const engine = resolveLoraEngine(options.engine, options.policy);
  return { ...config, engine, lora: { r, alpha, useRslora, targetModules: [...targetModules] as LoraModule[], seed: config.seed } };
}

/** The engine option resolved for a new run: onnxruntime's kernels, whose sampler follows the adapter. */
export function resolveLoraEngine(option: LoraGrpoOptions['engine'], policy: LoraPolicy): LoraEngine {
  // Options stored or written for the removed engines are strings outside the type.
  const value: string = option ?? 'auto';
  if (value === 'cpu' || value === 'webgpu') {
    throw new InvalidInputError('engine', `'${value}' was removed: LoRA trains on onnxruntime's kernels on the policy's own backend (its WASM, WebGPU or Node CPU); leave engine out or pass 'auto' or 'onnxruntime'.`);
  }
  if (value !== 'auto' && value !== 'onnxruntime') throw new InvalidInputError('engine', `must be 'auto' or 'onnxruntime', got ${String(value)}.`);
  checkFollows(policy);
  return 'onnxruntime';
}

/** The onnxruntime engine's sampler follows the adapter as graph inputs, which the policy must offer. */
export function checkFollows(policy: LoraPolicy): asserts policy is LoraPolicy & Required<Pick<LoraPolicy, 'followAdapter'>> {
  if (typeof policy.followAdapter !== 'function') {
    throw new InvalidInputError('policy', "has no followAdapter(); engine 'onnxruntime' trains an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx).");
  }
}
