/**
 * Full-parameter training (pretraining, supervised fine-tuning) as a training engine on
 * onnxruntime's kernels: the full-parameter graphs of lib/train/graph/lora-graph.ts (the LoRA
 * graphs with every weight an input and the backward's outputs d loss / d every weight) in two
 * sessions of the onnxruntime the caller hands over, and AdamW over every weight in TypeScript.
 * The weights are fed on every call, so an update needs no new graph and no new session.
 * Prompts are token ids. Any d loss / d logp drives it: supervised training is dlogp = -1/N on
 * each of the N answer tokens.
 */
import { InvalidInputError } from '../errors.js';
import { adamwTensors, globalNorm, type ResolvedOptimizer } from '../grad/optimizer.js';
import type { DecoderWeights } from '../lora/weights.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainEngine } from './engine.js';
import { batchInputs, floatTensor, layout, type Batch } from './graph/batch-layout.js';
import type { Precision } from './graph/builder.js';
import { buildDecoderGraphs, decoderParameters, GRAPH_IO, weightGradOutput, type DecoderParameter } from './graph/lora-graph.js';
import type { GraphRuntime, GraphSession, GraphTensor } from './graph/runtime.js';

/** What a decoder engine's `read` returns and `load` takes: every weight and AdamW's moments, in decoderParameters' order. */
export interface DecoderEngineState {
  weights: Float32Array[];
  m: Float32Array[];
  v: Float32Array[];
  updates: number;
}

export interface DecoderEngineOptions {
  /** Default 'float32'; 'float64' runs the same graphs in double (CPU only), for the exactness checks. */
  precision?: Precision;
  /** onnxruntime session options (execution providers, threads). */
  sessionOptions?: Record<string, unknown>;
}

interface KeptForward {
  batch: Batch;
  feeds: Record<string, GraphTensor>;
  out: Record<string, GraphTensor>;
}

export class DecoderEngine implements TrainEngine<readonly number[], DecoderEngineState> {
  readonly backend = 'onnxruntime';
  readonly #parameters: DecoderParameter[];
  readonly #m: Float32Array[];
  readonly #v: Float32Array[];
  #updates = 0;
  #kept?: KeptForward;
  #grad?: Float32Array[];

  private constructor(
    private readonly runtime: GraphRuntime,
    private readonly forwardSession: GraphSession,
    private readonly backwardSession: GraphSession,
    private readonly saved: string[],
    private readonly shared: string[],
    /** Trained in place. */
    readonly weights: DecoderWeights,
    readonly precision: Precision,
  ) {
    this.#parameters = decoderParameters(weights);
    this.#m = this.#parameters.map((p) => new Float32Array(p.tensor.length));
    this.#v = this.#parameters.map((p) => new Float32Array(p.tensor.length));
  }

  /** `weights` (float, not 4-bit) are trained in place. */
  static async create(runtime: GraphRuntime, weights: DecoderWeights, options: DecoderEngineOptions = {}): Promise<DecoderEngine> {
    const precision = options.precision ?? 'float32';
    const models = buildDecoderGraphs(weights, precision);
    // As for the LoRA graphs: double graphs keep onnxruntime's basic optimizations (the extended ones fuse into float-only ops).
    const sessionOptions = { ...(precision === 'float64' ? { graphOptimizationLevel: 'basic' } : {}), ...options.sessionOptions };
    const forward = await runtime.InferenceSession.create(models.forward, sessionOptions);
    const backward = await runtime.InferenceSession.create(models.backward, sessionOptions);
    return new DecoderEngine(runtime, forward, backward, models.saved, models.sharedInputs, weights, precision);
  }

  get updates(): number {
    return this.#updates;
  }

  async forward(groups: EngineBatch<readonly number[]>, options: ForwardOptions): Promise<EngineStats> {
    if (options.reference) throw new InvalidInputError('reference', 'full-parameter training has no frozen base to take as the reference; use a reference policy, or beta 0.');
    if (!(options.temperature > 0)) throw new InvalidInputError('temperature', `must be > 0, got ${String(options.temperature)}.`);
    this.#kept = undefined;
    const batch = layout(
      groups.map((g) => ({ promptIds: g.prompt, completions: g.completions })),
      this.weights.shape.vocabSize,
    );
    const feeds = batchInputs(this.runtime, this.precision, this.weights.shape, batch, 1 / options.temperature);
    for (const p of this.#parameters) feeds[p.name] = floatTensor(this.runtime, this.precision, p.tensor, p.dims);
    const out = await this.forwardSession.run(feeds);
    this.#kept = { batch, feeds, out };
    // The graph scores tokens in slot order already (group, completion, token).
    return { logps: Float64Array.from(out[GRAPH_IO.logps].data as ArrayLike<number>), entropies: Float64Array.from(out[GRAPH_IO.entropies].data as ArrayLike<number>) };
  }

  async backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    const kept = this.#kept;
    if (!kept) throw new InvalidInputError('backward', 'needs a forward first.');
    this.#kept = undefined;
    const { scored } = kept.batch;
    if (dLogp.length !== scored || dEntropy.length !== scored) throw new InvalidInputError('dLogp', `needs ${scored} entries (one per scored token), got ${dLogp.length} and ${dEntropy.length}.`);
    const feeds: Record<string, GraphTensor> = {};
    for (const name of this.saved) feeds[name] = kept.out[name];
    for (const name of this.shared) feeds[name] = kept.feeds[name];
    feeds[GRAPH_IO.dlogps] = floatTensor(this.runtime, this.precision, dLogp, [scored]);
    feeds[GRAPH_IO.dentropies] = floatTensor(this.runtime, this.precision, dEntropy, [scored]);
    const grads = await this.backwardSession.run(feeds);
    this.#grad = this.#parameters.map((p) => Float32Array.from(grads[weightGradOutput(p.name)].data as ArrayLike<number>));
    return globalNorm(this.#grad);
  }

  /** The last backward's gradient, one tensor per weight in decoderParameters' (decoderTensors') order. */
  gradient(): Float32Array[] | undefined {
    return this.#grad;
  }

  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    const grad = this.#grad;
    if (!grad) throw new InvalidInputError('step', 'needs a backward first.');
    this.#grad = undefined;
    adamwTensors(
      this.#parameters.map((p) => p.tensor),
      grad,
      this.#m,
      this.#v,
      ++this.#updates,
      clip,
      optimizer,
    );
  }

  release(): void {
    this.#kept = undefined;
    this.#grad = undefined;
  }

  async read(): Promise<DecoderEngineState> {
    const copy = (ts: Float32Array[]) => ts.map((t) => t.slice());
    return { weights: copy(this.#parameters.map((p) => p.tensor)), m: copy(this.#m), v: copy(this.#v), updates: this.#updates };
  }

  load(state: DecoderEngineState): void {
    const targets = this.#parameters.map((p) => p.tensor);
    const fits = (ts: Float32Array[] | undefined) => Array.isArray(ts) && ts.length === targets.length && ts.every((t, k) => t instanceof Float32Array && t.length === targets[k].length);
    if (!fits(state?.weights) || !fits(state.m) || !fits(state.v) || !Number.isInteger(state.updates) || state.updates < 0) {
      throw new InvalidInputError('state', "must hold every weight and both moments in the decoder's layout, and an integer update count >= 0.");
    }
    targets.forEach((t, k) => t.set(state.weights[k]));
    this.#m.forEach((t, k) => t.set(state.m[k]));
    this.#v.forEach((t, k) => t.set(state.v[k]));
    this.#updates = state.updates;
  }

  dispose(): void {
    this.release();
    void this.forwardSession.release?.();
    void this.backwardSession.release?.();
  }
}
