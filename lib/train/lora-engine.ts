/**
 * Full-depth LoRA (an adapter on every attention and MLP projection of every layer) as a training
 * engine: the forward and exact backward of the whole decoder with the adapter, on the CPU
 * (lib/lora/model.ts), WebGPU (lib/lora/webgpu/model.ts) or onnxruntime's own kernels (the
 * training graphs of lib/train/graph), and AdamW over every A and B on the CPU. The reference is
 * the same decoder with the adapter off, computed once per batch.
 *
 *   const trainer = new GrpoTrainer(loraEngine(await loraModel(policy, { r: 8 })), { lr: 1e-3 }, { numGenerations: 8 });
 */
import { InvalidInputError } from '../errors.js';
import { adamwTensors, globalNorm, type ResolvedOptimizer } from '../grad/optimizer.js';
import { createLoraAdapter, loraTensors, zerosLike, type LoraAdapter, type LoraOptions } from '../lora/adapter.js';
import { loraGroupForward, type LoraForwardOptions } from '../lora/model.js';
import { readDecoderWeights } from '../lora/onnx-weights.js';
import { findDecoder } from '../policy/onnx/structure/find-decoder.js';
import { loraOptimizerState, type LoraOptimizerState } from '../lora/optimizer.js';
import type { DecoderWeights } from '../lora/weights.js';
import { webgpuLoraGroupForward, type WebgpuLoraModel } from '../lora/webgpu/model.js';
import type { PromptInput } from '../core/policy.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainEngine } from './engine.js';
import type { GraphGroup, LoraGraphEngine } from './graph/lora-graph-engine.js';
import { backwardPasses, disposePasses, passStats, type KeptPass } from './passes.js';

/** The model a LoRA engine trains: the frozen decoder, the adapter on it, and how prompts become tokens. */
export interface LoraModel<Prompt = PromptInput> {
  weights: DecoderWeights;
  adapter: LoraAdapter;
  /** The prompt's token ids as the sampling policy sees them (`policy.promptIds`; the identity for prompts given as ids). */
  promptIds(input: Prompt): readonly number[];
}

/** What `loraModel` needs of a policy: its model files and its prompt encoding (an `OnnxPolicy`). */
export interface LoraBasePolicy {
  modelGraph(): Promise<{ graph: Uint8Array; externalData: Record<string, Uint8Array>; config: Record<string, unknown> }>;
  promptIds(input: PromptInput): number[];
}

/**
 * How the decoder's weights are found in the export: by the exporter's module names (what the
 * merge into the weights needs; default), or by the graph's structure, whatever the names
 * (lib/policy/onnx/structure: what the graph engine trains, Optimum and onnxruntime-genai exports included).
 */
export type DecoderReader = 'names' | 'structure';

/** The policy's base model read for training, with a new adapter (`options`) or the given one. */
export async function loraModel(policy: LoraBasePolicy, options: LoraOptions | LoraAdapter = {}, reader: DecoderReader = 'names'): Promise<LoraModel & { graph: Uint8Array }> {
  const { graph, externalData, config } = await policy.modelGraph();
  const weights: DecoderWeights = reader === 'structure' ? findDecoder(graph, { config, externalData }) : await readDecoderWeights(graph, { config, externalData });
  const adapter = 'layers' in options ? options : createLoraAdapter(weights.shape, options);
  if (adapter.layers.length !== weights.shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${weights.shape.numLayers}.`);
  return { weights, adapter, graph, promptIds: (input) => policy.promptIds(input) };
}

export interface LoraEngineOptions {
  /** Activation storage on the CPU; default 'float32'. */
  precision?: LoraForwardOptions['precision'];
  /** Rebuild each layer's activations in the backward (memory of one layer's); default true. */
  recompute?: boolean;
  /** The optimizer's state to continue from (a checkpoint's). */
  state?: LoraOptimizerState;
  /**
   * Where the forward and backward run: 'cpu' (default); 'webgpu' with `gpu`, the model's weights
   * on a device (createWebgpuLoraModel(device, model.weights)); or 'onnxruntime' with `graph`, the
   * training graphs of the model's weights in the policy's onnxruntime (LoraGraphEngine.create).
   * `dispose()` frees `gpu` or `graph`.
   */
  backend?: LoraBackend;
  gpu?: WebgpuLoraModel;
  graph?: LoraGraphEngine;
}

export type LoraBackend = 'cpu' | 'webgpu' | 'onnxruntime';

/** The adapter on `model`, updated in place. */
export function loraEngine<Prompt = PromptInput>(model: LoraModel<Prompt>, options: LoraEngineOptions = {}): LoraAdapterEngine<Prompt> {
  return new LoraAdapterEngine(model, options);
}

/** Both passes' shape: the WebGPU one's backward is asynchronous and holds device buffers until then. */
type LoraPass = KeptPass<LoraAdapter>;

/** The batch a LoRA engine keeps: its prompts' token ids and, once asked for, its reference log-probs. */
interface KeptBatch<Prompt> {
  groups: EngineBatch<Prompt>;
  promptIds: ReadonlyArray<readonly number[]>;
  refLogps?: Float64Array;
}

/** What a LoRA engine's `read` returns and `load` takes. */
export interface LoraEngineState {
  adapter: LoraAdapter;
  optimizer: LoraOptimizerState;
}

export class LoraAdapterEngine<Prompt = PromptInput> implements TrainEngine<Prompt, LoraEngineState> {
  readonly #model: LoraModel<Prompt>;
  readonly #precision: LoraForwardOptions['precision'];
  readonly #recompute: boolean;
  readonly #gpu: WebgpuLoraModel | undefined;
  readonly #graph: LoraGraphEngine | undefined;
  #optimizer: LoraOptimizerState;
  /** The batch whose prompt ids and reference log-probs are kept (they do not change with the adapter). */
  #batch?: KeptBatch<Prompt>;
  #passes?: LoraPass[];
  #grad?: LoraAdapter;

  constructor(model: LoraModel<Prompt>, options: LoraEngineOptions = {}) {
    if (!model || !model.weights || !model.adapter || typeof model.promptIds !== 'function') {
      throw new InvalidInputError('model', 'expected { weights, adapter, promptIds } (see loraModel).');
    }
    this.#model = model;
    this.#optimizer = loraOptimizerState(model.adapter, options.state);
    this.#precision = options.precision;
    this.#recompute = options.recompute ?? true;
    const backend = options.backend ?? 'cpu';
    if (backend !== 'cpu' && backend !== 'webgpu' && backend !== 'onnxruntime') throw new InvalidInputError('backend', `must be 'cpu', 'webgpu' or 'onnxruntime', got ${String(backend)}.`);
    if (backend === 'webgpu') {
      if (!options.gpu) throw new InvalidInputError('gpu', "is needed with backend 'webgpu': createWebgpuLoraModel(device, model.weights).");
      if (options.gpu.weights !== model.weights) throw new InvalidInputError('gpu', "holds other weights than the model's; upload model.weights (createWebgpuLoraModel(device, model.weights)).");
    }
    if (backend === 'onnxruntime') {
      if (!options.graph) throw new InvalidInputError('graph', "is needed with backend 'onnxruntime': LoraGraphEngine.create(runtime, model.weights, lora).");
      if (options.graph.weights !== model.weights) throw new InvalidInputError('graph', "was built from other weights than the model's; build it from model.weights.");
    }
    this.#gpu = backend === 'webgpu' ? options.gpu : undefined;
    this.#graph = backend === 'onnxruntime' ? options.graph : undefined;
  }

  get backend(): LoraBackend {
    return this.#gpu ? 'webgpu' : this.#graph ? 'onnxruntime' : 'cpu';
  }

  get updates(): number {
    return this.#optimizer.step;
  }

  /** The adapter being trained (live: updated in place by every step). */
  get adapter(): LoraAdapter {
    return this.#model.adapter;
  }

  get weights(): DecoderWeights {
    return this.#model.weights;
  }

  /** AdamW's live state (what a checkpoint stores with the adapter). */
  get optimizerState(): LoraOptimizerState {
    return this.#optimizer;
  }

  async forward(groups: EngineBatch<Prompt>, options: ForwardOptions): Promise<EngineStats> {
    this.#dropPasses();
    if (this.#batch?.groups !== groups) this.#batch = { groups, promptIds: groups.map((g, i) => this.#promptIds(g.prompt, i)) };
    const batch = this.#batch;
    const forward: LoraForwardOptions = { temperature: options.temperature, precision: this.#precision, recompute: this.#recompute };
    const passes = await this.#run(this.#model.adapter, batch, forward);
    this.#passes = passes;
    try {
      if (options.reference && !batch.refLogps) {
        const off = await this.#run(zerosLike(this.#model.adapter), batch, { ...forward, recompute: true });
        disposePasses(off);
        batch.refLogps = passStats(off).logps;
      }
    } catch (error) {
      this.#dropPasses();
      throw error;
    }
    return { ...passStats(passes), ...(options.reference ? { refLogps: batch.refLogps } : {}) };
  }

  async backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    const passes = this.#passes;
    if (!passes) throw new InvalidInputError('backward', 'needs a forward first.');
    this.#passes = undefined;
    const grad = zerosLike(this.#model.adapter);
    await backwardPasses(passes, dLogp, dEntropy, grad);
    this.#grad = grad;
    return globalNorm(loraTensors(grad));
  }

  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    const grad = this.#grad;
    if (!grad) throw new InvalidInputError('step', 'needs a backward first.');
    this.#grad = undefined;
    const state = this.#optimizer;
    adamwTensors(loraTensors(this.#model.adapter), loraTensors(grad), loraTensors(state.m), loraTensors(state.v), ++state.step, clip, optimizer);
  }

  release(): void {
    this.#dropPasses();
    this.#batch = undefined;
    this.#grad = undefined;
  }

  async read(): Promise<LoraEngineState> {
    return structuredClone({ adapter: this.#model.adapter, optimizer: this.#optimizer });
  }

  load(state: LoraEngineState): void {
    const target = loraTensors(this.#model.adapter);
    const source = state?.adapter ? loraTensors(state.adapter) : [];
    if (source.length !== target.length || source.some((t, k) => t.length !== target[k].length)) throw new InvalidInputError('state.adapter', "does not have the adapter's layout.");
    const optimizer = loraOptimizerState(this.#model.adapter, structuredClone(state.optimizer));
    source.forEach((t, k) => target[k].set(t));
    this.#optimizer = optimizer;
  }

  /** Frees the WebGPU model's buffers or the graph sessions it was made with; the adapter and the optimizer's state stay readable. */
  dispose(): void {
    this.release();
    this.#gpu?.dispose();
    void this.#graph?.release();
  }

  /** One kept pass per group; on a throw, the passes made so far are freed. */
  async #run(adapter: LoraAdapter, batch: KeptBatch<Prompt>, forward: LoraForwardOptions): Promise<LoraPass[]> {
    if (this.#graph) {
      const groups: GraphGroup[] = batch.groups.map(({ completions }, g) => ({ promptIds: batch.promptIds[g], completions }));
      return [await graphPass(this.#graph, adapter, groups, forward.temperature ?? 1)];
    }
    const passes: LoraPass[] = [];
    try {
      for (const [g, { completions }] of batch.groups.entries()) {
        const group = { promptIds: batch.promptIds[g], completions };
        passes.push(this.#gpu ? await webgpuLoraGroupForward(this.#gpu, adapter, group, forward) : loraGroupForward(this.#model.weights, adapter, group, forward));
      }
    } catch (error) {
      disposePasses(passes);
      throw error;
    }
    return passes;
  }

  #dropPasses(): void {
    disposePasses(this.#passes);
    this.#passes = undefined;
  }

  #promptIds(prompt: Prompt, group: number): readonly number[] {
    const ids = this.#model.promptIds(prompt);
    if (ids.length === 0) throw new InvalidInputError(`prompts[${group}]`, 'encodes to no tokens; the decoder needs at least one to predict the first completion token from.');
    return ids;
  }
}

/**
 * The whole batch as one pass of the training graphs (they run every group in one session call);
 * its backward's gradient is added into the engine's, as the per-group passes add theirs.
 */
async function graphPass(graph: LoraGraphEngine, adapter: LoraAdapter, groups: GraphGroup[], temperature: number): Promise<LoraPass> {
  const pass = await graph.forward(adapter, groups, temperature);
  return {
    logprobs: pass.logprobs,
    entropies: pass.entropies,
    backward: async (dlogps, grad, dentropies) => {
      const add = loraTensors(await pass.backward(dlogps, dentropies));
      loraTensors(grad).forEach((into, k) => add[k].forEach((v, i) => (into[i] += v)));
    },
  };
}
