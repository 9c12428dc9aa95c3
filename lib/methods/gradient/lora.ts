/**
 * Full-depth LoRA as the gradient method's adapter (`adapter: 'lora'`): PEFT's LoRA settings on
 * the attention and MLP projections of every layer, a smaller default learning rate, where the
 * forward and backward run (`engine`), and the policy that follows the adapter: after every update
 * the adapter is merged into the model's weights swapped into the policy, or (engine
 * 'onnxruntime') handed to it as graph inputs, so the next step samples from the updated model.
 * Runs are stored as kind 'lora'.
 *
 * A drive always starts by putting the run's own model into the policy (the base model, or the
 * merged adapter of the last committed step), so a resumed run samples from exactly the weights
 * an uninterrupted one would have, and ends where it would have.
 */
import { InvalidInputError, StoreCorruptError, UnsupportedError } from '../../errors.js';
import { isLoraCheckpoint } from '../../grad/format.js';
import { resolveLoraConfig, type LoraAdapter, type LoraOptions } from '../../lora/adapter.js';
import { readLoraAdapterFile, readLoraCheckpoint, writeLoraAdapterFile, writeLoraCheckpoint, type LoraAdapterFile } from '../../lora/format.js';
import type { LoraOptimizerState } from '../../lora/optimizer.js';
import { moduleDims, type DecoderWeights, type LoraModule } from '../../lora/weights.js';
import { LORA_RECORD } from './record.js';
import type { LoraAdapterEngine } from '../../train/lora-engine.js';
import type { GradientAdapter } from './adapter.js';
import type { Policy, PromptInput } from '../../core/policy.js';
import type { GrpoTrainer } from '../../train/trainer.js';
import type { LoraRunConfig } from './record.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import type { ModelGraph } from '../../policy/onnx/graph.js';
import type { GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import type { FollowedAdapter } from '../../policy/onnx/follow-adapter.js';
import { isNodeRuntime } from '../../policy/onnx/runtime.js';
import { resolveTrainingConfig, type TrainingRunOptions } from './training-options.js';

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
  /** The adapter the run trains: 'lora' here (`gradientGrpo` needs it; `loraGrpo` implies it). */
  adapter?: 'lora';
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

export const loraAdapter: GradientAdapter<'lora', LoraHandles, LoraGrpoOptions, LoraAdapterEngine, LoraAdapterFile, LoraAdapter> = {
  kind: 'lora',
  record: LORA_RECORD,
  create(options) {
    const config = resolveLoraRunConfig(options);
    return options.initialAdapter !== undefined ? { config, initial: initialAdapter(options.initialAdapter, config) } : { config };
  },
  validateHandles: validateLoraHandles,

  async open({ run, store, handles, last, initial }, train) {
    const { config } = run;
    const checkpoint = last ? await store.getAdapter(run.id) : undefined;
    let resumed: { adapter: LoraAdapter; state: LoraOptimizerState } | undefined;
    if (checkpoint) {
      if (!isLoraCheckpoint(checkpoint)) throw new StoreCorruptError(`run "${run.id}"`, `Run "${run.id}" is a lora run but its checkpoint is a head adapter's.`);
      resumed = readLoraCheckpoint(checkpoint);
    }
    if (!resumed && !initial && config.lora.initial) {
      throw new InvalidInputError('runId', `run "${run.id}" started from a given adapter and stopped before its first step was committed, so no store holds that adapter; start it again with gradientGrpo({ adapter: 'lora', initialAdapter }).`);
    }
    const adapter = resumed?.adapter ?? (initial ? structuredClone(initial) : undefined);
    const { loraModel, loraEngine, mergeLoraIntoOnnx, createWebgpuLoraModel, loraTrainingDevice, graphEngine } = await loraModules();
    // Runs stored before the engine option trained on the CPU.
    const backend = config.engine ?? 'cpu';
    // The graph engine finds the decoder by its structure; the merge the other engines' sampler needs, by its names.
    const model = await loraModel(handles.policy, adapter ?? { ...config.lora }, backend === 'onnxruntime' ? 'structure' : 'names');
    checkTrainable(model.weights, model.adapter);
    if (backend === 'webgpu') checkWebgpuAt(run.id, handles.policy);
    if (backend === 'onnxruntime') checkFollows(handles.policy);
    const gpu = backend === 'webgpu' ? createWebgpuLoraModel(await loraTrainingDevice(handles.policy), model.weights) : undefined;
    const graph = backend === 'onnxruntime' ? await graphEngine(model.weights, model.adapter, handles.policy.info.backend) : undefined;
    let trainer: GrpoTrainer<LoraAdapterEngine>;
    try {
      const engineOn = gpu ? { backend: 'webgpu' as const, gpu } : graph ? { backend: 'onnxruntime' as const, graph } : {};
      trainer = train(loraEngine(model, { ...(resumed ? { state: resumed.state } : {}), ...engineOn }));
    } catch (error) {
      gpu?.dispose();
      void graph?.release();
      throw error;
    }
    try {
      // The policy samples from the run's model from the first item on: the base one for a fresh
      // adapter (B = 0), else the adapter merged in; on onnxruntime, the adapter as graph inputs
      // from the start, so a fresh run and a resumed one sample with the same graph.
      if (graph) await followAdapter(handles.policy, trainer.engine.adapter);
      else await handles.policy.replaceGraph(adapter ? await mergeLoraIntoOnnx(model.graph, model.weights, model.adapter) : model.graph);
    } catch (error) {
      // The drive has no state to dispose yet: free the engine's WebGPU weights or graph sessions here.
      trainer.dispose();
      throw error;
    }
    // The sampler follows the updated adapter; `refreshMs` is what that took.
    const follow = async () => {
      const started = performance.now();
      const { engine } = trainer;
      if (engine.backend === 'onnxruntime') await followAdapter(handles.policy, engine.adapter);
      else await handles.policy.replaceGraph(await mergeLoraIntoOnnx(model.graph, engine.weights, engine.adapter));
      return { refreshMs: performance.now() - started };
    };
    return { trainer, follow };
  },
  checkpoint: async ({ engine }, step, model) => writeLoraCheckpoint(engine.adapter, engine.optimizerState, step, model),
  file: async ({ engine }, handles) => writeLoraAdapterFile(engine.adapter, { model: handles.policy.info.model, updates: engine.updates }),
};

/**
 * The training engine, loaded when a LoRA run opens: the method registry (and so the package's
 * main entry, and a page that only shows stored runs) holds these hooks without the engine's code.
 */
async function loraModules() {
  const [{ loraModel, loraEngine }, { mergeLoraIntoOnnx }, { createWebgpuLoraModel }, { loraTrainingDevice }, { LoraGraphEngine }, { policyGraphRuntime, graphSessionOptions }] = await Promise.all([
    import('../../train/lora-engine.js'),
    import('../../lora/onnx-merge.js'),
    import('../../lora/webgpu/model.js'),
    import('../../lora/webgpu/device.js'),
    import('../../train/graph/lora-graph-engine.js'),
    import('../../train/graph/policy-runtime.js'),
  ]);
  /** The training graphs of the model's weights, in the policy's onnxruntime on its backend. */
  const graphEngine = async (weights: DecoderWeights, adapter: LoraAdapter, backend: string) =>
    LoraGraphEngine.create(await policyGraphRuntime(), weights, { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules }, { sessionOptions: graphSessionOptions(backend) });
  return { loraModel, loraEngine, mergeLoraIntoOnnx, createWebgpuLoraModel, loraTrainingDevice, graphEngine };
}

/** The sampler takes the adapter's A and B as graph inputs (checked at the run's start: the policy has followAdapter). */
function followAdapter(policy: LoraPolicy, adapter: LoraAdapter): Promise<void> {
  checkFollows(policy);
  return policy.followAdapter(adapter);
}

/** A run that trained on WebGPU resumes there (to continue bit for bit), so it needs WebGPU again. */
function checkWebgpuAt(runId: string, policy: LoraPolicy): void {
  if (policy.info.backend === 'webgpu' || hasWebgpu()) return;
  throw new UnsupportedError(`Run "${runId}" trains on WebGPU (engine 'webgpu') and resumes only there, to continue as it would have; this runtime has no WebGPU (${NO_GPU}). Resume it in a browser with WebGPU.`);
}

/** A trained adapter to start from; its LoRA settings become the run's. */
function initialAdapter(value: NonNullable<LoraGrpoOptions['initialAdapter']>, config: LoraRunConfig): LoraAdapter {
  const adapter = typeof value === 'object' && 'layers' in value && 'config' in value ? value : readLoraAdapterFile(value, 'initialAdapter');
  const { r, alpha, useRslora, targetModules } = adapter.config;
  if (!Array.isArray(adapter.layers) || !(r >= 1)) throw new InvalidInputError('initialAdapter', 'expected a LoRA adapter ({ config, scale, layers }) or a LoRA adapter file.');
  config.lora = { ...config.lora, r, alpha, useRslora, targetModules: [...targetModules], initial: true };
  return { config: adapter.config, scale: adapter.scale, layers: adapter.layers };
}

/** The adapter fits the model, and the model's weights can take the merge the sampler needs. */
function checkTrainable(weights: DecoderWeights, adapter: LoraAdapter): void {
  adapter.layers.forEach((layer, l) => {
    for (const [module, pair] of Object.entries(layer)) {
      const want = moduleDims(weights.shape, module as keyof typeof layer);
      if (pair.inDim !== want.inDim || pair.outDim !== want.outDim) {
        throw new InvalidInputError('adapter', `layer ${l} ${module} is [${pair.inDim} -> ${pair.outDim}]; the model's is [${want.inDim} -> ${want.outDim}].`);
      }
      if (!(weights.layers[l][module as keyof typeof layer].weight instanceof Float32Array)) {
        throw new UnsupportedError(`Layer ${l} ${module} is 4-bit: the sampler follows the adapter by merging it into the weights, which a 4-bit model cannot hold. Load the fp32 or fp16 export (dtype "fp32" or "fp16").`);
      }
    }
  });
}
