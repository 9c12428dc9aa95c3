/**
 * `GrpoTrainer`: one GRPO update step over any `TrainingEngine` (engine.ts), in the shape of the JAX
 * GRPO trainer of artifex (`GRPOTrainer.train_step` on a `GroupRolloutBatch`):
 *
 *   const trainer = new GrpoTrainer(headEngine(policy), { lr: 0.02 }, new GrpoConfig({ numGenerations: 8 }));
 *   const { loss, metrics } = await trainer.trainStep(groupRolloutBatch(groups), prompts);
 *
 * Per step: the engine's forward gives every completion token's log-prob and entropy; TRL's loss
 * (`grpoObjective`: every loss type, the sampling correction, truncation masks, the entropy bonus,
 * the driver's advantages) gives the loss and d loss / d log-prob, d loss / d entropy; the engine's
 * backward turns them into the parameters' gradient; clip_grad_norm_'s factor and one AdamW update
 * follow; adaptive entropy moves its coefficient. An engine with `forwardBackward` (the LoRA
 * engine) runs the forward and the backward part by part instead, asking each part's sensitivities
 * as it goes (partSensitivities), for every loss whose gradient is per completion
 * (perCompletionGradient): the same gradient, with one part in memory at a time. Calling `trainStep` again with the same batch is
 * another optimisation iteration on it (TRL's `num_iterations`): the old log-probs stay the
 * batch's, and the engine keeps what does not depend on the parameters.
 */
import { InvalidInputError, throwIfAborted } from '../errors.js';
import type { TrainStepMetrics } from './metrics.js';
import { logprobDrift, type LogprobDrift } from './logprob-drift.js';
import { grpoObjective, partSensitivities, tokenLayout, type ObjectiveResult, type TokenLayout } from './objective.js';
import { clipFactor, resolveOptimizer, type OptimizerOptions, type ResolvedOptimizer } from './optimizer.js';
import { appliedEntropyCoef, nextAdaptiveEntropy, resolveAdaptiveEntropy, type AdaptiveEntropyOptions, type AdaptiveEntropyState, type ResolvedAdaptiveEntropy } from '../math/adaptive-entropy.js';
import type { AdvantageOptions, AdvantageResult } from '../math/advantages.js';
import { GroupRolloutBatch, GrpoConfig, type GrpoConfigInit } from '../math/batch.js';
import { perCompletionGradient, type GrpoLossConfig } from '../math/loss-config.js';
import type { GrpoLossMetrics } from '../math/loss-metrics.js';
import { nanMean, nanStd } from '../math/stats.js';
import { samplingCorrection, type SamplingSettings } from '../math/sampling-correction.js';
import type { Rows } from '../math/validate.js';
import type { Policy, PromptInput } from '../core/policy.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainingEngine } from './engine.js';

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
   * The KL reference: 'base' (default) is the engine's model with the trainable parameters off;
   * any other policy that can score completions is asked once per batch.
   */
  reference?: 'base' | Policy;
  /** The rollouts' sampling temperature: log-probs are of softmax(z / T), as in TRL. Default 1. */
  temperature?: number;
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

/** The batch the trainer is iterating on: its token layout, the engine's view of it, and a reference policy's log-probs. */
interface CurrentBatch {
  batch: GroupRolloutBatch;
  prompts: string;
  layout: TokenLayout;
  groups: EngineBatch<PromptInput>;
  refLogps?: Float64Array;
}

/**
 * TRL's GRPO update over a training engine: `trainStep(batch, prompts)` takes a step's groups
 * (`groupRolloutBatch`), their rewards' group-relative advantages (or the driver's), the configured
 * loss and its gradient on the engine, and one AdamW update, and reports the loss and TRL's
 * metrics. `state()` and `load()` checkpoint it.
 */
export class GrpoTrainer<Engine extends TrainingEngine<PromptInput, unknown> = TrainingEngine<PromptInput, unknown>> {
  readonly engine: Engine;
  readonly config: GrpoConfig;
  readonly optimizer: ResolvedOptimizer;
  readonly temperature: number;
  readonly #loss: GrpoLossConfig;
  readonly #advantages: Omit<AdvantageOptions, 'groupSize'>;
  readonly #reference: 'base' | Policy;
  readonly #maskTruncated: boolean;
  readonly #adaptive: ResolvedAdaptiveEntropy | undefined;
  #entropyState: AdaptiveEntropyState;
  #current?: CurrentBatch;
  #disposed = false;

  constructor(engine: Engine, optimizer: OptimizerOptions = {}, config: GrpoConfig | GrpoConfigInit = {}, options: TrainerOptions = {}) {
    if (!engine || typeof engine.forward !== 'function' || typeof engine.backward !== 'function' || typeof engine.step !== 'function') {
      throw new InvalidInputError('engine', 'must be a training engine (headEngine(policy), loraEngine(model), ...).');
    }
    this.engine = engine;
    // The trainer owns its engine from here on: one it cannot use is freed (on the head, taken off the policy).
    try {
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
    } catch (error) {
      engine.dispose();
      throw error;
    }
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
    const current = await this.#batch(batch, prompts, options.signal);
    const forwardOptions: ForwardOptions = {
      temperature: this.temperature,
      reference: this.#loss.beta !== 0 && !current.refLogps,
      entropyGradient: (lossConfig.entropyCoef ?? 0) !== 0,
      signal: options.signal,
    };
    const objectiveOf = (stats: EngineStats) =>
      grpoObjective(batch, current.layout, { ...stats, refLogps: current.refLogps ?? stats.refLogps ?? new Float64Array(current.layout.count) }, lossConfig, options.advantages ?? this.#advantages, {
        ...(options.samplingLogprobs ? { samplingLogprobs: options.samplingLogprobs } : {}),
        ...(this.#maskTruncated ? { truncated: options.truncated } : {}),
      });
    let stats: EngineStats;
    let objective: ObjectiveResult;
    let gradNorm: number;
    // What the forward kept (a WebGPU pass's buffers) is freed on any throw before the backward took it.
    try {
      if (this.engine.forwardBackward && perCompletionGradient(lossConfig)) {
        ({ stats, gradNorm } = await this.engine.forwardBackward(current.groups, forwardOptions, partSensitivities(current.layout.count, objectiveOf)));
        objective = objectiveOf(stats);
      } else {
        stats = await this.engine.forward(current.groups, forwardOptions);
        throwIfAborted(options.signal);
        objective = objectiveOf(stats);
        gradNorm = await this.engine.backward(objective.dLogp, objective.dEntropy);
      }
    } catch (error) {
      this.releaseStates();
      throw error;
    }
    const drift = logprobDrift(batch, current.layout, stats.logps);
    if (!Number.isFinite(gradNorm)) throw new InvalidInputError('gradient', 'is not finite; the update was skipped and the parameters are unchanged.');
    const clip = clipFactor(gradNorm, this.optimizer.maxGradNorm);
    await this.engine.step(this.optimizer, clip);
    if (this.#adaptive) this.#entropyState = nextAdaptiveEntropy(this.#entropyState, objective.metrics.trainedEntropy ?? 0, this.#adaptive);

    const metrics = stepMetrics(objective, {
      gradNorm,
      clipCoef: clip,
      step: this.engine.updates,
      learningRate: this.optimizer.lr,
      entropyCoef: lossConfig.entropyCoef ?? 0,
      ...(this.#adaptive ? { adaptiveEntropy: this.#entropyState } : {}),
      logprobDrift: drift,
    });
    return { loss: objective.loss, metrics };
  }

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

  /** Frees what is kept for the current batch (the next trainStep starts its batch afresh); the parameters stay. */
  releaseStates(): void {
    this.#current = undefined;
    this.engine.release();
  }

  /** The engine's parameters and optimizer state (host copies). */
  state(): ReturnType<Engine['read']> {
    this.#checkOpen();
    return this.engine.read() as ReturnType<Engine['read']>;
  }

  /** Continues from a saved state (weights, moments, step count) of the same shape. */
  load(state: Awaited<ReturnType<Engine['read']>>): void {
    this.#checkOpen();
    this.engine.load(state);
  }

  /** Frees the engine (on the head adapter, the policy samples from the base model again); trainStep is refused after. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#current = undefined;
    this.engine.dispose();
  }

  /** The batch's layout and groups, made once per batch so the engine can keep its per-batch work. */
  async #batch(batch: GroupRolloutBatch, prompts: PromptInput[], signal: AbortSignal | undefined): Promise<CurrentBatch> {
    const key = JSON.stringify(prompts);
    if (this.#current?.batch === batch && this.#current.prompts === key) return this.#current;
    this.releaseStates();
    const layout = tokenLayout(batch);
    const g = batch.groupSize;
    const groups = prompts.map((prompt, group) => ({ prompt: promptOf(prompt, group), completions: layout.completions.slice(group * g, (group + 1) * g) }));
    let refLogps: Float64Array | undefined;
    if (this.#reference !== 'base' && this.#loss.beta !== 0) {
      refLogps = new Float64Array(layout.count);
      for (const [group, { prompt, completions }] of groups.entries()) {
        const scored = await this.#reference.scoreCompletions!({ ...prompt, completions: completions.map((c) => [...c]), temperature: this.temperature, signal });
        scored.logprobs.forEach((row, i) => refLogps!.set(row, layout.offsets[group * g + i]));
      }
    }
    this.#current = { batch, prompts: key, layout, groups, ...(refLogps ? { refLogps } : {}) };
    return this.#current;
  }

  #checkOpen(): void {
    if (this.#disposed) throw new InvalidInputError('trainer', 'was disposed; create a new GrpoTrainer.');
  }
}

function promptOf(prompt: PromptInput, group: number): PromptInput {
  if (!prompt || typeof prompt !== 'object') throw new InvalidInputError(`prompts[${group}]`, 'must be { prompt } or { messages }.');
  return prompt.messages !== undefined ? { messages: prompt.messages } : { prompt: prompt.prompt };
}

/**
 * Checks what an update needs (the batch's shape against the config, one prompt per group, the
 * log-probs a sampling correction needs, the truncation flags masking needs) with a typed error,
 * and returns the step's loss configuration (the entropy coefficient fixed or the adaptive one's).
 */
function stepLossConfig(
  batch: unknown,
  prompts: unknown,
  options: TrainStepOptions,
  s: { numGenerations: number; temperature: number; loss: GrpoLossConfig; maskTruncated: boolean; adaptive: ResolvedAdaptiveEntropy | undefined; entropyState: AdaptiveEntropyState },
): GrpoLossConfig {
  if (!(batch instanceof GroupRolloutBatch)) throw new InvalidInputError('batch', 'must be a GroupRolloutBatch.');
  if (batch.groupSize !== s.numGenerations) {
    throw new InvalidInputError('batch', `has groups of ${batch.groupSize}, but the config's numGenerations is ${s.numGenerations}.`);
  }
  if (!Array.isArray(prompts) || prompts.length !== batch.numGroups) {
    throw new InvalidInputError('prompts', `must hold one prompt per group (${batch.numGroups}), got ${Array.isArray(prompts) ? prompts.length : typeof prompts}.`);
  }
  const correction = samplingCorrection(options.sampling, s.temperature, s.loss.importanceSampling);
  if (correction && !options.samplingLogprobs) {
    throw new InvalidInputError(
      'samplingLogprobs',
      `are needed for the '${correction.mode}' sampling correction (the rollouts were sampled with a filter or at another temperature); pass the completions' sampledLogprobs, or set loss.importanceSampling to null.`,
    );
  }
  if (s.maskTruncated && !options.truncated) {
    throw new InvalidInputError('truncated', "is needed with maskTruncatedCompletions: one flag per completion, true where its finishReason is 'length'.");
  }
  const entropyCoef = s.adaptive ? appliedEntropyCoef(s.entropyState, s.adaptive) : (s.loss.entropyCoef ?? 0);
  return { ...s.loss, importanceSampling: correction ?? null, entropyCoef };
}

/** One update's metrics, from its objective and what the optimizer and the entropy controller did. */
function stepMetrics(
  objective: Pick<ObjectiveResult, 'loss' | 'metrics' | 'advantages' | 'activeTokens'>,
  update: { gradNorm: number; clipCoef: number; step: number; learningRate: number; entropyCoef: number; adaptiveEntropy?: AdaptiveEntropyState; logprobDrift: LogprobDrift },
): TrainStepMetrics {
  const { advantages, rewards, fracRewardZeroStd } = objective.advantages;
  const m = objective.metrics;
  return {
    loss: objective.loss,
    ...(m.kl !== undefined ? { kl: m.kl } : {}),
    entropy: m.entropy ?? 0,
    clipRatioLow: m.clipRatioLow ?? 0,
    clipRatioHigh: m.clipRatioHigh ?? 0,
    clipRatioRegion: m.clipRatioRegion ?? 0,
    ...optionalMetrics(m),
    entropyCoef: update.adaptiveEntropy ? update.adaptiveEntropy.coef : update.entropyCoef,
    ...(update.adaptiveEntropy ? { adaptiveEntropy: { ...update.adaptiveEntropy } } : {}),
    rewardMean: nanMean(rewards),
    rewardStd: nanStd(rewards),
    fracRewardZeroStd,
    advantageMean: nanMean(advantages),
    advantageStd: nanStd(advantages),
    advantageMin: Math.min(...advantages),
    advantageMax: Math.max(...advantages),
    gradNorm: update.gradNorm,
    clipCoef: update.clipCoef,
    tokens: objective.activeTokens,
    step: update.step,
    learningRate: update.learningRate,
    logprobDrift: { ...update.logprobDrift },
  };
}

/** The metrics a loss type or option adds, copied when present. */
function optionalMetrics(m: GrpoLossMetrics): Partial<TrainStepMetrics> {
  const out: Partial<TrainStepMetrics> = {};
  for (const key of ['clipRatioLowMin', 'clipRatioHighMax', 'cispoClipRatio', 'vespoPhiMean', 'policyLoss'] as const) {
    if (m[key] !== undefined) out[key] = m[key];
  }
  if (m.importanceSamplingRatio) out.importanceSamplingRatio = { ...m.importanceSamplingRatio };
  return out;
}
