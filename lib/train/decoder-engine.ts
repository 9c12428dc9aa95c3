/**
 * Full-parameter training (pretraining, supervised fine-tuning) as a training engine: the bare
 * decoder's forward and its backward into every weight (lib/lora/full-grad.ts, the LoRA engine's
 * passes with no adapter), and AdamW over every weight. Prompts are token ids. Any d loss / d logp
 * drives it: supervised training is dlogp = -1/N on each of the N answer tokens.
 */
import { InvalidInputError } from '../errors.js';
import { adamwTensors, globalNorm, type ResolvedOptimizer } from '../grad/optimizer.js';
import { decoderGroupForward, decoderTensors, zerosLikeDecoder } from '../lora/full-grad.js';
import type { DecoderWeights } from '../lora/weights.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainEngine } from './engine.js';
import { backwardPasses, passStats, type KeptPass } from './passes.js';

/** AdamW's moments over every weight (decoderTensors' order) and its update count. */
export class DecoderMoments {
  step = 0;
  readonly m: Float32Array[];
  readonly v: Float32Array[];

  constructor(weights: DecoderWeights) {
    this.m = decoderTensors(weights).map((t) => new Float32Array(t.length));
    this.v = decoderTensors(weights).map((t) => new Float32Array(t.length));
  }

  /** One AdamW update of `weights` in place from `grad` (the weights' layout), scaled by `clip`. */
  apply(weights: DecoderWeights, grad: DecoderWeights, clip: number, optimizer: ResolvedOptimizer): void {
    adamwTensors(decoderTensors(weights), decoderTensors(grad), this.m, this.v, ++this.step, clip, optimizer);
  }
}

/** What a decoder engine's `read` returns and `load` takes: every weight and AdamW's moments, in decoderTensors' order. */
export interface DecoderEngineState {
  weights: Float32Array[];
  m: Float32Array[];
  v: Float32Array[];
  updates: number;
}

export interface DecoderEngineOptions {
  /** Rebuild each layer's activations in the backward (memory of one layer's); default true. */
  recompute?: boolean;
}

export class DecoderEngine implements TrainEngine<readonly number[], DecoderEngineState> {
  readonly backend = 'cpu';
  readonly #recompute: boolean;
  readonly #moments: DecoderMoments;
  #passes?: Array<KeptPass<DecoderWeights>>;
  #grad?: DecoderWeights;

  /** `weights` are trained in place. */
  constructor(
    readonly weights: DecoderWeights,
    options: DecoderEngineOptions = {},
  ) {
    this.#recompute = options.recompute ?? true;
    this.#moments = new DecoderMoments(weights);
  }

  get updates(): number {
    return this.#moments.step;
  }

  async forward(groups: EngineBatch<readonly number[]>, options: ForwardOptions): Promise<EngineStats> {
    if (options.reference) throw new InvalidInputError('reference', 'full-parameter training has no frozen base to take as the reference; use a reference policy, or beta 0.');
    this.#passes = groups.map((g) => decoderGroupForward(this.weights, { promptIds: g.prompt, completions: g.completions }, { temperature: options.temperature, recompute: this.#recompute }));
    return passStats(this.#passes);
  }

  async backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    const passes = this.#passes;
    if (!passes) throw new InvalidInputError('backward', 'needs a forward first.');
    this.#passes = undefined;
    const grad = zerosLikeDecoder(this.weights);
    await backwardPasses(passes, dLogp, dEntropy, grad);
    this.#grad = grad;
    return globalNorm(decoderTensors(grad));
  }

  /** The last backward's gradient, in the weights' layout (a data-parallel caller sums the workers' shards of a batch). */
  gradient(): DecoderWeights | undefined {
    return this.#grad;
  }

  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    const grad = this.#grad;
    if (!grad) throw new InvalidInputError('step', 'needs a backward first.');
    this.#grad = undefined;
    this.#moments.apply(this.weights, grad, clip, optimizer);
  }

  release(): void {
    this.#passes = undefined;
    this.#grad = undefined;
  }

  async read(): Promise<DecoderEngineState> {
    const copy = (ts: Float32Array[]) => ts.map((t) => t.slice());
    return { weights: copy(decoderTensors(this.weights)), m: copy(this.#moments.m), v: copy(this.#moments.v), updates: this.#moments.step };
  }

  load(state: DecoderEngineState): void {
    const targets = decoderTensors(this.weights);
    const fits = (ts: Float32Array[] | undefined) => Array.isArray(ts) && ts.length === targets.length && ts.every((t, k) => t instanceof Float32Array && t.length === targets[k].length);
    if (!fits(state?.weights) || !fits(state.m) || !fits(state.v) || !Number.isInteger(state.updates) || state.updates < 0) {
      throw new InvalidInputError('state', "must hold every weight and both moments in the decoder's layout, and an integer update count >= 0.");
    }
    targets.forEach((t, k) => t.set(state.weights[k]));
    this.#moments.m.forEach((t, k) => t.set(state.m[k]));
    this.#moments.v.forEach((t, k) => t.set(state.v[k]));
    this.#moments.step = state.updates;
  }

  dispose(): void {
    this.release();
  }
}
