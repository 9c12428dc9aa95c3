/**
 * Options of `loraGrpo`, their defaults, and their validation into the serialisable
 * `LoraRunConfig` stored with the run. The objective, schedule, sampling and optimizer are the
 * gradient method's (every grpoLoss option); what differs is the adapter: PEFT's LoRA settings on
 * the attention and MLP projections of every layer, and a smaller default learning rate.
 */
import { InvalidInputError, UnsupportedError } from '../../errors.js';
import { resolveLoraConfig, type LoraAdapter, type LoraOptions } from '../../lora/adapter.js';
import type { LoraAdapterFile } from '../../lora/format.js';
import type { LoraModule } from '../../lora/weights.js';
import type { Policy, PromptInput } from '../../core/policy.js';
import type { LoraRunConfig } from '../gradient/record.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import type { ModelGraph } from '../../policy/onnx/graph.js';
import type { GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import type { FollowedAdapter } from '../../policy/onnx/follow-adapter.js';
import { isNodeRuntime } from '../../policy/onnx/runtime.js';
import { resolveTrainingConfig, type TrainingRunOptions } from '../grpo-options.js';

/**
 * The policy a LoRA run trains: it samples, and after every update it follows the adapter: its
 * weights are replaced by the adapted model's (engines 'cpu' and 'webgpu'), or it takes A and B
 * as graph inputs (`followAdapter`, engine 'onnxruntime'). An `OnnxPolicy` from `loadOnnxPolicy`.
 */
export interface LoraPolicy extends Policy {
  modelGraph(): Promise<ModelGraph>;
  replaceGraph(graph: Uint8Array): Promise<void>;
  promptIds(input: PromptInput): number[];
  /** Samples and scores under the adapter's A and B as graph inputs, with no merge (engine 'onnxruntime'). */
  followAdapter?(adapter: FollowedAdapter): Promise<void>;
  /** The WebGPU device the policy samples on (an `OnnxPolicy` on WebGPU); a WebGPU-trained run shares it. */
  webgpuDevice?(): GpuDeviceLike | undefined;
}

/**
 * Where a run's forward and backward run: the CPU engine, the WGSL one on a WebGPU device, or
 * onnxruntime's own kernels (the training graphs of lib/train/graph in the policy's onnxruntime).
 */
export type LoraEngine = 'cpu' | 'webgpu' | 'onnxruntime';

export type LoraHandles = LoopHandles<LoraPolicy>;

export interface LoraGrpoOptions extends LoraHandles, TrainingRunOptions {
  /** Rank (default 8), alpha (default 16), target modules (default all seven), rsLoRA. */
  lora?: Omit<LoraOptions, 'seed'>;
  /**
   * Where the forward and backward run. Default 'auto': 'webgpu' when the policy samples on WebGPU
   * (its device is shared), else in Node 'onnxruntime' when the policy can follow an adapter as
   * graph inputs (an `OnnxPolicy`), else 'cpu'; a software WebGPU adapter is never picked unless the
   * policy already runs on it. 'webgpu' with a policy off WebGPU requests a device of its own.
   * 'onnxruntime' runs the training graphs in the policy's own onnxruntime (on its backend), and
   * the sampler follows the adapter as graph inputs (`followAdapter`: no merge, no new session).
   * Stored with the run: a resumed run trains on the same engine (bit-exact resume holds per
   * engine, on the same machine).
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

/** The engine option resolved for a new run ('auto' follows the policy's device). */
export function resolveLoraEngine(option: LoraGrpoOptions['engine'], policy: LoraPolicy): LoraEngine {
  const value = option ?? 'auto';
  if (value !== 'auto' && value !== 'cpu' && value !== 'webgpu' && value !== 'onnxruntime') {
    throw new InvalidInputError('engine', `must be 'auto', 'cpu', 'webgpu' or 'onnxruntime', got ${String(value)}.`);
  }
  if (value === 'onnxruntime') checkFollows(policy);
  const onWebgpu = policy.info.backend === 'webgpu';
  // onnxruntime's kernels are the default where the method's tests ran on them (Node); a page keeps
  // the CPU engine beside WebAssembly until a tab has run the method there.
  if (value === 'auto') return onWebgpu ? 'webgpu' : isNodeRuntime() && typeof policy.followAdapter === 'function' ? 'onnxruntime' : 'cpu';
  if (value === 'webgpu' && !onWebgpu && !hasWebgpu()) {
    throw new UnsupportedError(`engine 'webgpu' needs WebGPU, and this runtime has none (${NO_GPU}); use engine 'cpu' or 'auto'.`);
  }
  return value;
}

/** The onnxruntime engine's sampler follows the adapter as graph inputs, which the policy must offer. */
export function checkFollows(policy: LoraPolicy): asserts policy is LoraPolicy & Required<Pick<LoraPolicy, 'followAdapter'>> {
  if (typeof policy.followAdapter !== 'function') {
    throw new InvalidInputError('policy', "has no followAdapter(); engine 'onnxruntime' trains an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx).");
  }
}

export const NO_GPU = 'navigator.gpu is missing: Node, or a browser or worker without WebGPU';

/** Whether this runtime has WebGPU at all. */
export function hasWebgpu(): boolean {
  return (globalThis.navigator as { gpu?: unknown } | undefined)?.gpu !== undefined;
}
