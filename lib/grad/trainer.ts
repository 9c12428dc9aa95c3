/**
 * `GrpoTrainer`: gradient GRPO on an adapter over a frozen ONNX model's LM head, in the shape of
 * the JAX GRPO trainer of artifex (`GRPOTrainer.train_step` on a `GroupRolloutBatch`):
 *
 *   const trainer = new GrpoTrainer(policy, { lr: 0.02 }, new GrpoConfig({ numGenerations: 8 }));
 *   const { loss, metrics } = await trainer.trainStep(groupRolloutBatch, prompts);
 *
 * The policy is the model being trained: its `generateGroup` samples from the adapted logits, and
 * the reference (for the KL term) is the base model, the same forward pass with the adapter off.
 * One `trainStep` is one optimizer update; calling it again with the same batch is another
 * optimisation iteration on it (TRL's `num_iterations`): the old log-probs stay the batch's, the
 * frozen model is not run again, only the adapter's part is recomputed.
 */
import { InvalidInputError } from '../errors.js';
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import { GroupRolloutBatch, GrpoConfig, type GrpoConfigInit } from '../math/batch.js';
import { nextAdaptiveEntropy, resolveAdaptiveEntropy, type AdaptiveEntropyOptions, type AdaptiveEntropyState, type ResolvedAdaptiveEntropy } from '../math/adaptive-entropy.js';
import type { GrpoLossConfig } from '../math/loss.js';
import type { SamplingSettings } from '../math/sampling-correction.js';
import type { Rows } from '../math/validate.js';
import type { OnnxPolicy } from '../policy/onnx/policy.js';
import type { TrainableHead } from '../policy/onnx/head.js';
import type { HeadAdapterWeights } from '../policy/head-adapter.js';
import type { Policy, PromptInput } from '../core/policy.js';
import { createAdapterWeights, resolveShape, type AdapterInit, type AdapterShape } from './adapter.js';
import type { AdapterState, HeadEngine, TokenStats } from './engine.js';
import { HostEngine } from './host-engine.js';
import { writeAdapterFile, type AdapterFile } from './format.js';
import { grpoObjective, tokenLayout, type TokenLayout } from './objective.js';
import { clipFactor, resolveOptimizer, type OptimizerOptions, type ResolvedOptimizer } from './optimizer.js';
import { stepMetrics, type TrainStepMetrics } from './metrics.js';
import { stepLossConfig } from './step-input.js';
import { WebGpuEngine } from './webgpu/engine.js';

export interface TrainerOptions {
  /**
   * Options of `grpoLoss` that `GrpoConfig` does not carry, or overrides of it (lossType, delta,
   * topEntropyQuantile...). `importanceSampling` left out means TRL's default: 'sequence_mask'
   * with clipMax 3 when a step's rollouts were sampled with a filter or at another temperature
   * (see `samplingCorrection`); null turns the correction off.
   */
  loss?: GrpoLossConfig;
  /** Leave completions that hit the length limit out of the loss (TRL's mask_truncated_completions). */
  maskTruncatedCompletions?: boolean;
  /**
   * TRL's use_adaptive_entropy: the loss's entropyCoef is the starting coefficient, moved after
   * every update toward the target entropy (see `nextAdaptiveEntropy`).
   */
  adaptiveEntropy?: AdaptiveEntropyOptions;
  /** How rewards become advantages (scaling, estimator, reward weights); groups come from the batch. */
  advantages?: Omit<AdvantageOptions, 'groupSize'>;
  /**
   * The KL reference: 'base' (default) is the frozen model without the adapter, from the same
   * forward pass; any other policy that can score completions is asked once per batch.
   */
  reference?: 'base' | Policy;
  /** The rollouts' sampling temperature: log-probs are of softmax(z / T), as in TRL. Default 1. */
  temperature?: number;
  /**
   * A new adapter's shape and seed (rank 8, scale 2 by default), or the weights to start from (a
   * trained adapter, e.g. `readAdapterFile(file)`), whose shape must fit the policy.
   */
  adapter?: AdapterInit | HeadAdapterWeights;
}

export interface TrainStepOptions {
  signal?: AbortSignal;
  /** How the batch's rollouts were sampled; with a filter or another temperature the correction defaults on. */
  sampling?: SamplingSettings;
  /** B rows of T, aligned with the batch: the rollouts' `sampledLogprobs` (padding 0). */
  samplingLogprobs?: Rows;
  /** Per row: the completion's finishReason was 'length'; needed with maskTruncatedCompletions. */
  truncated?: ArrayLike<boolean>;
  /**
   * The batch's advantages as computed elsewhere (the driver's, which it also stores and emits);
   * without them they are computed here from the batch's rewards.
   */
  advantages?: AdvantageResult;
}

export interface TrainStepResult {
  loss: number;
  metrics: TrainStepMetrics;
}

type Trainable = OnnxPolicy | TrainableHead;

export class GrpoTrainer {
  readonly config: GrpoConfig;
  readonly optimizer: ResolvedOptimizer;
  readonly shape: AdapterShape;
  readonly temperature: number;
  readonly #head: TrainableHead;
  /** The base model's id, recorded in exported adapters. */
  readonly #model: string | undefined;
  readonly #engine: HeadEngine;
  readonly #loss: GrpoLossConfig;
  readonly #advantages: Omit<AdvantageOptions, 'groupSize'>;
  readonly #reference: 'base' | Policy;
  readonly #maskTruncated: boolean;
  readonly #adaptive: ResolvedAdaptiveEntropy | undefined;
  #entropyState: AdaptiveEntropyState;
  /** The batch whose frozen-model states the engine holds. */
  #states?: { batch: GroupRolloutBatch; prompts: string; layout: TokenLayout; refLogps?: Float64Array };
  #disposed = false;

  constructor(policy: Trainable, optimizer: OptimizerOptions = {}, config: GrpoConfig | GrpoConfigInit = {}, options: TrainerOptions = {}) {
    const head = 'head' in policy ? policy.head : policy;
    if (!head) {
      throw new InvalidInputError('policy', 'has no trainable head; load it with loadOnnxPolicy({ model, hiddenState: true }).');
    }
    this.#head = head;
    this.#model = 'info' in policy ? policy.info.model : undefined;
    this.config = config instanceof GrpoConfig ? config : new GrpoConfig(config);
    this.optimizer = resolveOptimizer(optimizer);
    this.#loss = { ...this.config.toLossConfig(), ...options.loss };
    this.#advantages = options.advantages ?? {};
    this.#reference = options.reference ?? 'base';
    this.#maskTruncated = options.maskTruncatedCompletions ?? false;
    if (typeof this.#maskTruncated !== 'boolean') throw new InvalidInputError('maskTruncatedCompletions', 'must be true or false.');
    this.#adaptive = options.adaptiveEntropy === undefined ? undefined : resolveAdaptiveEntropy(options.adaptiveEntropy);
    this.#entropyState = { coef: this.#loss.entropyCoef ?? 0 };
    if (this.#reference !== 'base' && typeof this.#reference?.scoreCompletions !== 'function') {
      throw new InvalidInputError('reference', "must be 'base' or a policy with scoreCompletions.");
    }
    this.temperature = options.temperature ?? 1;
    if (!(Number.isFinite(this.temperature) && this.temperature > 0)) {
      throw new InvalidInputError('temperature', `must be a finite number > 0 (the rollouts' sampling temperature), got ${this.temperature}.`);
    }
    const initial = options.adapter && 'a' in options.adapter ? options.adapter : undefined;
    this.shape = resolveShape(head.hiddenSize, head.vocabSize, initial ? { rank: initial.rank, scale: initial.scale } : (options.adapter as AdapterInit | undefined));
    if (initial && (initial.hiddenSize !== head.hiddenSize || initial.vocabSize !== head.vocabSize)) {
      throw new InvalidInputError('adapter', `was trained for hidden size ${initial.hiddenSize} and vocabulary ${initial.vocabSize}; this model has ${head.hiddenSize} and ${head.vocabSize}.`);
    }
    const weights = initial ?? createAdapterWeights(this.shape, (options.adapter as AdapterInit | undefined)?.seed);
    // The arithmetic runs where the policy's logits are: next to them on WebGPU, else on the CPU.
    this.#engine = head.kind === 'gpu' ? new WebGpuEngine(head.device!, weights) : new HostEngine(weights);
    head.setAdapter(this.#engine.binding());
  }

  /** Where the arithmetic runs: 'gpu' (WGSL kernels on the policy's device) or 'host' (CPU). */
  get engine(): 'gpu' | 'host' {
    return this.#engine.kind;
  }

  /**
   * One optimizer update on a grouped rollout batch. `prompts` holds one prompt per group (the
   * batch's rows carry completion tokens only). Resolves with the loss before the update.
   */
  async trainStep(batch: GroupRolloutBatch, prompts: PromptInput[], options: TrainStepOptions = {}): Promise<TrainStepResult> {
    this.#checkOpen();
    const lossConfig = stepLossConfig(batch, prompts, options, {
      numGenerations: this.config.numGenerations,
      temperature: this.temperature,
      loss: this.#loss,
      maskTruncated: this.#maskTruncated,
      adaptive: this.#adaptive,
      entropyState: this.#entropyState,
    });
    const states = await this.#collect(batch, prompts, options.signal);
    const stats = await this.#engine.forward(states.layout.targets, this.temperature);
    const withReference: TokenStats = states.refLogps ? { ...stats, refLogps: states.refLogps } : stats;
    const objective = grpoObjective(batch, states.layout, withReference, lossConfig, options.advantages ?? this.#advantages, {
      ...(options.samplingLogprobs ? { samplingLogprobs: options.samplingLogprobs } : {}),
      ...(this.#maskTruncated ? { truncated: options.truncated } : {}),
    });
    const gradNorm = await this.#engine.backward(states.layout.targets, objective.dLogp, objective.dEntropy, this.temperature);
    const clip = clipFactor(gradNorm, this.optimizer.maxGradNorm);
    await this.#engine.step(this.optimizer, clip);
    if (this.#adaptive) this.#entropyState = nextAdaptiveEntropy(this.#entropyState, objective.metrics.trainedEntropy ?? 0, this.#adaptive);

    const metrics = stepMetrics(objective, {
      gradNorm,
      clipCoef: clip,
      step: this.#engine.updates,
      learningRate: this.optimizer.lr,
      entropyCoef: lossConfig.entropyCoef ?? 0,
      ...(this.#adaptive ? { adaptiveEntropy: this.#entropyState } : {}),
    });
    return { loss: objective.loss, metrics };
  }

  /** The trained adapter as an adapter file (format.ts), to save, share or load again. */
  async exportAdapter(): Promise<AdapterFile> {
    const state = await this.state();
    return writeAdapterFile({ ...this.shape, a: state.a, b: state.b }, { model: this.#model, updates: state.updates });
  }

  /** Frees the frozen model's kept states (the next trainStep runs the model again); the adapter stays. */
  releaseStates(): void {
    this.#states = undefined;
    this.#engine.resetStates(0);
  }

  /** The adapter's weights and the optimizer's state (host copies). */
  state(): Promise<AdapterState> {
    this.#checkOpen();
    return this.#engine.read();
  }

  /** Continues from a saved state (weights, moments, step count) of an adapter of the same shape. */
  /**
   * Continues adaptive entropy control from a state an earlier update reported
   * (`metrics.adaptiveEntropy`), as a resumed run must to train as the uninterrupted one did.
   */
  restoreAdaptiveEntropy(state: AdaptiveEntropyState): void {
    if (!this.#adaptive) throw new InvalidInputError('adaptiveEntropy', 'this trainer was made without adaptiveEntropy; there is no state to restore.');
    if (!state || !Number.isFinite(state.coef) || (state.lastEntropy !== undefined && !Number.isFinite(state.lastEntropy))) {
      throw new InvalidInputError('adaptiveEntropy', 'expected { coef, lastEntropy? } with finite numbers, as metrics.adaptiveEntropy reports it.');
    }
    this.#entropyState = { coef: state.coef, ...(state.lastEntropy !== undefined ? { lastEntropy: state.lastEntropy } : {}) };
  }

  load(state: AdapterState): void {
    this.#checkOpen();
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
    this.#engine.load(state);
  }

  /** Takes the adapter off the policy (it samples from the base model again) and frees the engine. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#head.adapter === this.#engine.binding()) this.#head.setAdapter(undefined);
    this.#engine.dispose();
    this.#states = undefined;
  }

  /** Runs the frozen model over the batch once; later iterations on the same batch reuse its states. */
  async #collect(batch: GroupRolloutBatch, prompts: PromptInput[], signal: AbortSignal | undefined) {
    const key = JSON.stringify(prompts);
    if (this.#states?.batch === batch && this.#states.prompts === key) return this.#states;
    this.#states = undefined;
    const layout = tokenLayout(batch);
    this.#engine.resetStates(layout.count);
    const g = batch.groupSize;
    for (let group = 0; group < batch.numGroups; group++) {
      const rows = Array.from({ length: g }, (_, i) => group * g + i);
      const prompt = promptOf(prompts[group], group);
      await this.#head.collect({ ...prompt, completions: rows.map((row) => layout.completions[row]), signal }, (window) =>
        this.#engine.writeWindow(window, window.slots.map(([i, t]) => layout.offsets[rows[i]] + t)),
      );
    }
    let refLogps: Float64Array | undefined;
    if (this.#reference !== 'base' && this.#loss.beta !== 0) {
      refLogps = new Float64Array(layout.count);
      for (let group = 0; group < batch.numGroups; group++) {
        const rows = Array.from({ length: g }, (_, i) => group * g + i);
        const scored = await this.#reference.scoreCompletions!({
          ...promptOf(prompts[group], group),
          completions: rows.map((row) => layout.completions[row]),
          temperature: this.temperature,
          signal,
        });
        rows.forEach((row, i) => refLogps!.set(scored.logprobs[i], layout.offsets[row]));
      }
    }
    this.#states = { batch, prompts: key, layout, ...(refLogps ? { refLogps } : {}) };
    return this.#states;
  }

  #checkOpen(): void {
    if (this.#disposed) throw new InvalidInputError('trainer', 'was disposed; create a new GrpoTrainer.');
  }
}

function promptOf(prompt: PromptInput, group: number): PromptInput {
  if (!prompt || typeof prompt !== 'object') throw new InvalidInputError(`prompts[${group}]`, 'must be { prompt } or { messages }.');
  return prompt.messages !== undefined ? { messages: prompt.messages } : { prompt: prompt.prompt };
}
