/**
 * `LoraGrpoTrainer`: gradient GRPO on a full-depth LoRA adapter, in the shape of the head
 * adapter's `GrpoTrainer` (and of artifex's `GRPOTrainer.train_step` on a `GroupRolloutBatch`):
 *
 *   const model = await loraModel(policy, { r: 8 });
 *   const trainer = new LoraGrpoTrainer(model, { lr: 1e-3 }, new GrpoConfig({ numGenerations: 8 }));
 *   const { loss, metrics } = await trainer.trainStep(groupRolloutBatch(groups), prompts);
 *
 * The objective is the head trainer's (`grpoObjective`: every loss type and option, the sampling
 * correction, truncation masks, adaptive entropy, the driver's advantages); the log-probs,
 * entropies and their gradient come from the decoder (model.ts on the CPU, webgpu/model.ts on
 * WebGPU with `engine: 'webgpu'`) instead of the head. The KL
 * reference is the base model: the same decoder with the adapter off. Calling `trainStep` again
 * on the same batch is another iteration on it (TRL's `num_iterations`): the reference
 * log-probs are kept, the adapted model is run again.
 */
import { InvalidInputError, throwIfAborted } from '../errors.js';
import { stepMetrics } from '../grad/metrics.js';
import { stepLossConfig } from '../grad/step-input.js';
import { grpoObjective, tokenLayout, type TokenLayout } from '../grad/objective.js';
import type { OptimizerOptions } from '../grad/optimizer.js';
import type { TrainStepOptions, TrainStepResult } from '../grad/trainer.js';
import { nextAdaptiveEntropy, resolveAdaptiveEntropy, type AdaptiveEntropyOptions, type AdaptiveEntropyState, type ResolvedAdaptiveEntropy } from '../math/adaptive-entropy.js';
import type { AdvantageOptions } from '../math/advantages.js';
import { GroupRolloutBatch, GrpoConfig, type GrpoConfigInit } from '../math/batch.js';
import type { GrpoLossConfig } from '../math/loss.js';
import type { PromptInput } from '../core/policy.js';
import { createLoraAdapter, zerosLike, type LoraAdapter, type LoraOptions } from './adapter.js';
import { loraGroupForward, type LoraForwardOptions } from './model.js';
import { readDecoderWeights } from './onnx-weights.js';
import { LoraOptimizer, type LoraOptimizerState } from './optimizer.js';
import type { DecoderWeights } from './weights.js';
import { webgpuLoraGroupForward, type WebgpuLoraModel } from './webgpu/model.js';

/** What one GRPO update is, for either adapter (`GrpoTrainer` on the head, `LoraGrpoTrainer` on every layer). */
export interface GroupTrainer {
  trainStep(batch: GroupRolloutBatch, prompts: PromptInput[], options?: TrainStepOptions): Promise<TrainStepResult>;
}

/** The model a LoRA trainer trains: the frozen decoder, the adapter on it, and how prompts become tokens. */
export interface LoraModel {
  weights: DecoderWeights;
  adapter: LoraAdapter;
  /** The prompt's token ids as the sampling policy sees them (`policy.promptIds`). */
  promptIds(input: PromptInput): readonly number[];
}

/** What `loraModel` needs of a policy: its model files and its prompt encoding (an `OnnxPolicy`). */
export interface LoraBasePolicy {
  modelGraph(): Promise<{ graph: Uint8Array; externalData: Record<string, Uint8Array>; config: Record<string, unknown> }>;
  promptIds(input: PromptInput): number[];
}

/** The policy's base model read for training, with a new adapter (`options`) or the given one. */
export async function loraModel(policy: LoraBasePolicy, options: LoraOptions | LoraAdapter = {}): Promise<LoraModel & { graph: Uint8Array }> {
  const { graph, externalData, config } = await policy.modelGraph();
  const weights = await readDecoderWeights(graph, { config, externalData });
  const adapter = 'layers' in options ? options : createLoraAdapter(weights.shape, options);
  if (adapter.layers.length !== weights.shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${weights.shape.numLayers}.`);
  return { weights, adapter, graph, promptIds: (input) => policy.promptIds(input) };
}

export interface LoraGrpoTrainerOptions {
  /** Options of `grpoLoss` that `GrpoConfig` does not carry, or overrides of it (as `GrpoTrainer`'s). */
  loss?: GrpoLossConfig;
  /** Leave completions that hit the length limit out of the loss (TRL's mask_truncated_completions). */
  maskTruncatedCompletions?: boolean;
  /** TRL's use_adaptive_entropy. */
  adaptiveEntropy?: AdaptiveEntropyOptions;
  /** How rewards become advantages when `trainStep` is not handed them. */
  advantages?: Omit<AdvantageOptions, 'groupSize'>;
  /** The rollouts' sampling temperature; default 1. */
  temperature?: number;
  /** Activation storage; default 'float32'. */
  precision?: LoraForwardOptions['precision'];
  /** Rebuild each layer's activations in the backward (memory of one layer's); default true. */
  recompute?: boolean;
  /** The optimizer's state to continue from (a checkpoint's). */
  state?: LoraOptimizerState;
  /**
   * Where the forward and backward run: 'cpu' (default, model.ts), or 'webgpu' with `gpu`, the
   * model's weights on a device (createWebgpuLoraModel(device, model.weights)). The optimizer
   * runs on the CPU either way; `precision` applies to the CPU engine only, `recompute` to both.
   * `dispose()` frees `gpu`.
   */
  engine?: 'cpu' | 'webgpu';
  gpu?: WebgpuLoraModel;
}

/** One group's pass on either engine (the WebGPU one's backward is asynchronous). */
interface EnginePass {
  logprobs: number[][];
  entropies: number[][];
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: LoraAdapter, dentropies?: ReadonlyArray<ArrayLike<number>>): void | Promise<void>;
  dispose?(): void;
}

export class LoraGrpoTrainer implements GroupTrainer {
  readonly config: GrpoConfig;
  readonly temperature: number;
  readonly optimizer: LoraOptimizer;
  readonly #model: LoraModel;
  readonly #loss: GrpoLossConfig;
  readonly #advantages: Omit<AdvantageOptions, 'groupSize'>;
  readonly #maskTruncated: boolean;
  readonly #adaptive: ResolvedAdaptiveEntropy | undefined;
  readonly #forward: LoraForwardOptions;
  readonly #gpu: WebgpuLoraModel | undefined;
  #entropyState: AdaptiveEntropyState;
  #disposed = false;
  /** The batch whose reference log-probs are kept (they do not change with the adapter). */
  #reference?: { batch: GroupRolloutBatch; prompts: string; refLogps: Float64Array };

  constructor(model: LoraModel, optimizer: OptimizerOptions = {}, config: GrpoConfig | GrpoConfigInit = {}, options: LoraGrpoTrainerOptions = {}) {
    if (!model || !model.weights || !model.adapter || typeof model.promptIds !== 'function') {
      throw new InvalidInputError('model', 'expected { weights, adapter, promptIds } (see loraModel).');
    }
    this.#model = model;
    this.config = config instanceof GrpoConfig ? config : new GrpoConfig(config);
    this.optimizer = new LoraOptimizer(model.adapter, optimizer, options.state);
    this.#loss = { ...this.config.toLossConfig(), ...options.loss };
    this.#advantages = options.advantages ?? {};
    this.#maskTruncated = options.maskTruncatedCompletions ?? false;
    if (typeof this.#maskTruncated !== 'boolean') throw new InvalidInputError('maskTruncatedCompletions', 'must be true or false.');
    this.#adaptive = options.adaptiveEntropy === undefined ? undefined : resolveAdaptiveEntropy(options.adaptiveEntropy);
    this.#entropyState = { coef: this.#loss.entropyCoef ?? 0 };
    this.temperature = options.temperature ?? 1;
    if (!(Number.isFinite(this.temperature) && this.temperature > 0)) {
      throw new InvalidInputError('temperature', `must be a finite number > 0 (the rollouts' sampling temperature), got ${this.temperature}.`);
    }
    this.#forward = { temperature: this.temperature, precision: options.precision, recompute: options.recompute ?? true };
    const engine = options.engine ?? 'cpu';
    if (engine !== 'cpu' && engine !== 'webgpu') throw new InvalidInputError('engine', `must be 'cpu' or 'webgpu', got ${String(engine)}.`);
    if (engine === 'webgpu') {
      if (!options.gpu) throw new InvalidInputError('gpu', "is needed with engine 'webgpu': createWebgpuLoraModel(device, model.weights).");
      if (options.gpu.weights !== model.weights) throw new InvalidInputError('gpu', "holds other weights than the model's; upload model.weights (createWebgpuLoraModel(device, model.weights)).");
    }
    this.#gpu = engine === 'webgpu' ? options.gpu : undefined;
  }

  /** Which engine runs the forward and backward. */
  get engine(): 'cpu' | 'webgpu' {
    return this.#gpu ? 'webgpu' : 'cpu';
  }

  async #pass(adapter: LoraAdapter, promptIds: readonly number[], completions: number[][], options: LoraForwardOptions): Promise<EnginePass> {
    const group = { promptIds, completions };
    if (this.#gpu) return webgpuLoraGroupForward(this.#gpu, adapter, group, options);
    return loraGroupForward(this.#model.weights, adapter, group, options);
  }

  get adapter(): LoraAdapter {
    return this.#model.adapter;
  }

  get weights(): DecoderWeights {
    return this.#model.weights;
  }

  /**
   * One optimizer update on a grouped rollout batch; `prompts` holds one prompt per group.
   * Resolves with the loss before the update. The adapter is updated in place.
   */
  async trainStep(batch: GroupRolloutBatch, prompts: PromptInput[], options: TrainStepOptions = {}): Promise<TrainStepResult> {
    if (this.#disposed) throw new InvalidInputError('trainer', 'was disposed; create a new LoraGrpoTrainer.');
    const lossConfig = stepLossConfig(batch, prompts, options, {
      numGenerations: this.config.numGenerations,
      temperature: this.temperature,
      loss: this.#loss,
      maskTruncated: this.#maskTruncated,
      adaptive: this.#adaptive,
      entropyState: this.#entropyState,
    });
    const layout = tokenLayout(batch);
    const promptIds = prompts.map((p, g) => this.#promptIds(p, g));
    throwIfAborted(options.signal);

    const passes = await this.#groups(layout, batch.groupSize, (rows, g) => this.#pass(this.#model.adapter, promptIds[g], rows, this.#forward));
    const grad = zerosLike(this.#model.adapter);
    let objective: ReturnType<typeof grpoObjective>;
    // A WebGPU pass holds its activations on the device until its backward; free them on any throw.
    try {
      const logps = new Float64Array(layout.count);
      const entropies = new Float64Array(layout.count);
      passes.forEach((pass, g) => {
        pass.logprobs.forEach((row, i) => logps.set(row, layout.offsets[g * batch.groupSize + i]));
        pass.entropies.forEach((row, i) => entropies.set(row, layout.offsets[g * batch.groupSize + i]));
      });
      const refLogps = this.#loss.beta === 0 ? new Float64Array(layout.count) : await this.#referenceLogps(batch, layout, prompts, promptIds);
      throwIfAborted(options.signal);
      objective = grpoObjective(batch, layout, { logps, entropies, refLogps }, lossConfig, options.advantages ?? this.#advantages, {
        ...(options.samplingLogprobs ? { samplingLogprobs: options.samplingLogprobs } : {}),
        ...(this.#maskTruncated ? { truncated: options.truncated } : {}),
      });
      for (const [g, pass] of passes.entries()) {
        const rows = (values: Float64Array) => pass.logprobs.map((row, i) => values.subarray(layout.offsets[g * batch.groupSize + i], layout.offsets[g * batch.groupSize + i] + row.length));
        await pass.backward(rows(objective.dLogp), grad, rows(objective.dEntropy));
      }
    } finally {
      for (const pass of passes) pass.dispose?.();
    }
    const { gradNorm, clip } = this.optimizer.update(this.#model.adapter, grad);
    if (this.#adaptive) this.#entropyState = nextAdaptiveEntropy(this.#entropyState, objective.metrics.trainedEntropy ?? 0, this.#adaptive);

    const metrics = stepMetrics(objective, {
      gradNorm,
      clipCoef: clip,
      step: this.optimizer.state.step,
      learningRate: this.optimizer.options.lr,
      entropyCoef: lossConfig.entropyCoef ?? 0,
      ...(this.#adaptive ? { adaptiveEntropy: this.#entropyState } : {}),
    });
    return { loss: objective.loss, metrics };
  }

  /** Continues adaptive entropy control from a state an earlier update reported (`metrics.adaptiveEntropy`). */
  restoreAdaptiveEntropy(state: AdaptiveEntropyState): void {
    if (!this.#adaptive) throw new InvalidInputError('adaptiveEntropy', 'this trainer was made without adaptiveEntropy; there is no state to restore.');
    if (!state || !Number.isFinite(state.coef) || (state.lastEntropy !== undefined && !Number.isFinite(state.lastEntropy))) {
      throw new InvalidInputError('adaptiveEntropy', 'expected { coef, lastEntropy? } with finite numbers, as metrics.adaptiveEntropy reports it.');
    }
    this.#entropyState = { coef: state.coef, ...(state.lastEntropy !== undefined ? { lastEntropy: state.lastEntropy } : {}) };
  }

  /**
   * Frees the WebGPU model's buffers (the `gpu` it was made with) and the kept reference
   * log-probs. The adapter and the optimizer's state stay readable; trainStep is refused after.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#reference = undefined;
    this.#gpu?.dispose();
  }

  /** Forgets the kept reference log-probs (the next batch computes its own). */
  releaseStates(): void {
    this.#reference = undefined;
  }

  /** The base model's log-probs (the adapter off) of the batch's tokens, kept while the batch is the same. */
  async #referenceLogps(batch: GroupRolloutBatch, layout: TokenLayout, prompts: PromptInput[], promptIds: ReadonlyArray<readonly number[]>): Promise<Float64Array> {
    const key = JSON.stringify(prompts);
    if (this.#reference?.batch === batch && this.#reference.prompts === key) return this.#reference.refLogps;
    const off = zerosLike(this.#model.adapter);
    const refLogps = new Float64Array(layout.count);
    await this.#groups(layout, batch.groupSize, async (rows, g) => {
      const pass = await this.#pass(off, promptIds[g], rows, { ...this.#forward, recompute: true });
      pass.logprobs.forEach((row, i) => refLogps.set(row, layout.offsets[g * batch.groupSize + i]));
      pass.dispose?.();
      return pass;
    });
    this.#reference = { batch, prompts: key, refLogps };
    return refLogps;
  }

  async #groups(layout: TokenLayout, groupSize: number, run: (rows: number[][], group: number) => Promise<EnginePass>): Promise<EnginePass[]> {
    const passes: EnginePass[] = [];
    for (let g = 0; g * groupSize < layout.completions.length; g++) passes.push(await run(layout.completions.slice(g * groupSize, (g + 1) * groupSize), g));
    return passes;
  }

  #promptIds(prompt: PromptInput, group: number): readonly number[] {
    if (!prompt || typeof prompt !== 'object') throw new InvalidInputError(`prompts[${group}]`, 'must be { prompt } or { messages }.');
    const ids = this.#model.promptIds(prompt);
    if (ids.length === 0) throw new InvalidInputError(`prompts[${group}]`, 'encodes to no tokens; the decoder needs at least one to predict the first completion token from.');
    return ids;
  }
}
