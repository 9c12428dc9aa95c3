/**
 * The LM-head adapter (z' = z + s (h A) B over a frozen ONNX model) as a training engine. The
 * frozen model runs once per batch: its per-token states are kept by the head kernels
 * (`HeadGraphs`: the head graphs on the onnxruntime the policy runs on, on its backend:
 * Node CPU, WASM or WebGPU), and every iteration on the batch recomputes only the adapter's part.
 * The reference log-probs (adapter off) come from the same states, so they cost nothing.
 */
import { InvalidInputError } from '../errors.js';
import { createAdapterWeights, resolveShape, type AdapterInit, type AdapterShape } from './head/adapter.js';
import { writeAdapterFile, type AdapterFile } from './head/format.js';
import type { ResolvedOptimizer } from './optimizer.js';
import type { AdapterState } from './head/state.js';
import type { HeadAdapterWeights } from '../policy/head-adapter.js';
import type { TrainableHead } from '../policy/onnx/head.js';
import type { TrainablePolicy } from './trainable-policy.js';
import type { PromptInput } from '../core/policy.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainingEngine } from './engine.js';
import { HeadGraphs } from './graph/head-graphs.js';
import { graphSessionOptions, policyGraphRuntime } from './graph/policy-runtime.js';

export interface HeadEngineOptions {
  /**
   * A new adapter's shape and seed (rank 8, scale 2 by default), or the weights to start from (a
   * trained adapter, e.g. `readAdapterFile(file)`), whose shape must fit the policy.
   */
  adapter?: AdapterInit | HeadAdapterWeights;
}

/** The adapter on `policy`'s head (loaded with `hiddenState: true`); the policy samples from the adapted logits. */
export function headEngine(policy: TrainablePolicy | TrainableHead, options: HeadEngineOptions = {}): HeadTrainingEngine {
  return new HeadTrainingEngine(policy, options);
}

export class HeadTrainingEngine implements TrainingEngine<PromptInput, AdapterState> {
  readonly shape: AdapterShape;
  readonly #head: TrainableHead;
  /** The base model's id, recorded in exported adapters. */
  readonly #model: string | undefined;
  readonly #kernels: HeadGraphs;
  /** The batch whose frozen-model states the kernels hold, and its flat targets. */
  #batch?: { groups: EngineBatch<PromptInput>; targets: Int32Array };
  #temperature = 1;

  constructor(policy: TrainablePolicy | TrainableHead, options: HeadEngineOptions = {}) {
    const head = isHead(policy) ? policy : policy?.head;
    if (!head) throw new InvalidInputError('policy', 'has no trainable head; load it with loadOnnxPolicy({ model, hiddenState: true }).');
    this.#head = head;
    this.#model = isHead(policy) ? undefined : policy.info?.model;
    const initial = options.adapter && 'a' in options.adapter ? options.adapter : undefined;
    this.shape = resolveShape(head.hiddenSize, head.vocabSize, initial ? { rank: initial.rank, scale: initial.scale } : (options.adapter as AdapterInit | undefined));
    if (initial && (initial.hiddenSize !== head.hiddenSize || initial.vocabSize !== head.vocabSize)) {
      throw new InvalidInputError('adapter', `was trained for hidden size ${initial.hiddenSize} and vocabulary ${initial.vocabSize}; this model has ${head.hiddenSize} and ${head.vocabSize}.`);
    }
    const weights = initial ?? createAdapterWeights(this.shape, (options.adapter as AdapterInit | undefined)?.seed);
    // The graphs run on the policy's backend: its WebGPU device (where the sampler's adapter copies live too), else its CPU or WASM kernels.
    this.#kernels = new HeadGraphs(weights, policyGraphRuntime, graphSessionOptions(head.kind === 'gpu' ? 'webgpu' : 'cpu'), head.device);
    head.setAdapter(this.#kernels.binding());
  }

  /** 'gpu' (the graphs on the policy's WebGPU device) or 'host' (onnxruntime on the CPU or WASM). */
  get backend(): 'gpu' | 'host' {
    return this.#kernels.kind;
  }

  get updates(): number {
    return this.#kernels.updates;
  }

  async forward(groups: EngineBatch<PromptInput>, options: ForwardOptions): Promise<EngineStats> {
    if (this.#batch?.groups !== groups) this.#batch = { groups, targets: await this.#collect(groups, options.signal) };
    this.#temperature = options.temperature;
    return this.#kernels.forward(this.#batch.targets, options.temperature);
  }

  backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    if (!this.#batch) throw new InvalidInputError('backward', 'needs a forward first.');
    return this.#kernels.backward(this.#batch.targets, dLogp, dEntropy, this.#temperature);
  }

  step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    return this.#kernels.step(optimizer, clip);
  }

  release(): void {
    this.#batch = undefined;
    this.#kernels.resetStates(0);
  }

  read(): Promise<AdapterState> {
    return this.#kernels.read();
  }

  load(state: AdapterState): void {
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    const sizes: Array<[string, ArrayLike<number>, number]> = [
      ['a', state?.a, d * r],
      ['b', state?.b, r * v],
      ['m.a', state?.m?.a, d * r],
      ['m.b', state?.m?.b, r * v],
      ['v.a', state?.v?.a, d * r],
      ['v.b', state?.v?.b, r * v],
    ];
    for (const [name, values, size] of sizes) {
      if (!(values instanceof Float32Array) || values.length !== size) throw new InvalidInputError(`state.${name}`, `must be a Float32Array of ${size} values.`);
    }
    if (!Number.isInteger(state.updates) || state.updates < 0) throw new InvalidInputError('state.updates', 'must be an integer >= 0.');
    this.#kernels.load(state);
  }

  /** The trained adapter as an adapter file (lib/train/head/format.ts), to save, share or load again. */
  async exportAdapter(): Promise<AdapterFile> {
    const state = await this.read();
    return writeAdapterFile({ ...this.shape, a: state.a, b: state.b }, { model: this.#model, updates: state.updates });
  }

  /** Takes the adapter off the policy (it samples from the base model again) and frees the kernels. */
  dispose(): void {
    if (this.#head.adapter === this.#kernels.binding()) this.#head.setAdapter(undefined);
    this.#kernels.dispose();
    this.#batch = undefined;
  }

  /** Runs the frozen model over the batch into the kernels' token slots; resolves with each slot's target token. */
  async #collect(groups: EngineBatch<PromptInput>, signal: AbortSignal | undefined): Promise<Int32Array> {
    this.#batch = undefined;
    const offsets = groups.map((g) => g.completions.map(() => 0));
    let count = 0;
    groups.forEach((g, group) => g.completions.forEach((c, i) => ((offsets[group][i] = count), (count += c.length))));
    this.#kernels.resetStates(count);
    const targets = new Int32Array(count);
    for (const [group, { prompt, completions }] of groups.entries()) {
      completions.forEach((c, i) => targets.set(c, offsets[group][i]));
      await this.#head.collect({ ...prompt, completions: completions.map((c) => [...c]), signal }, (window) =>
        this.#kernels.writeWindow(window, window.slots.map(([i, t]) => offsets[group][i] + t)),
      );
    }
    return targets;
  }
}

/** A policy's head handed over on its own (its `head`), rather than the policy. */
function isHead(value: TrainablePolicy | TrainableHead): value is TrainableHead {
  return typeof (value as Partial<TrainableHead> | undefined)?.collect === 'function';
}
