/**
 * Full-parameter training (pretraining, supervised fine-tuning) as a training engine (the third
 * `TrainingEngine`, beside the head's and LoRA's) on onnxruntime's kernels: the full-parameter graphs of lib/train/graph/lora-graph.ts (the LoRA
 * graphs with every weight an input and the backward's outputs d loss / d every weight) in two
 * sessions of the onnxruntime the caller hands over, and AdamW over every weight in TypeScript.
 * The weights are fed on every call, so an update needs no new graph and no new session. A batch
 * runs as a few graph runs, its groups cut by length (chunksByLength), their gradients summed.
 * Prompts are token ids. Any d loss / d logp drives it: supervised training is dlogp = -1/N on
 * each of the N answer tokens.
 */
import { InvalidInputError } from '../errors.js';
import { adamwTensors, globalNorm, type ResolvedOptimizer } from './optimizer.js';
import type { DecoderWeights } from '../weights/decoder.js';
import type { EngineBatch, EngineStats, ForwardOptions, TrainingEngine } from './engine.js';
import { batchInputs, floatTensor, layout, type Batch } from './graph/batch-layout.js';
import type { Precision } from './graph/builder.js';
import { buildDecoderGraphs, decoderParameters, GRAPH_IO, weightGradOutput, type DecoderParameter } from './graph/lora-graph.js';
import type { GraphRuntime, GraphTensor } from './graph/runtime.js';
import { backwardFeeds, openSessionPair, releaseSessionPair, type SessionPair } from './graph/session-pair.js';

/** What the full-parameter engine's `read` returns and `load` takes: every weight and AdamW's moments, in decoderParameters' order. */
export interface FullEngineState {
  weights: Float32Array[];
  m: Float32Array[];
  v: Float32Array[];
  updates: number;
}

export interface FullEngineOptions {
  /** Default 'float32'; 'float64' runs the same graphs in double (CPU only), for the exactness checks. */
  precision?: Precision;
  /** onnxruntime session options (execution providers, threads). */
  sessionOptions?: Record<string, unknown>;
}

/** One graph run of a forward: some of the batch's groups, and where their slots sit in the batch's. */
interface KeptChunk {
  batch: Batch;
  feeds: Record<string, GraphTensor>;
  out: Record<string, GraphTensor>;
  /** The batch slot of each of the chunk's scored tokens, in the chunk's order. */
  slots: Int32Array;
}

interface KeptForward {
  chunks: KeptChunk[];
  scored: number;
}

/** A chunk's padded rows may hold at most this many times its real tokens (see chunksByLength). */
const MAX_PADDING = 1.25;

/**
 * The batch's groups cut into chunks of similar row length, each one graph run: a run pads every
 * row to its longest, so one long example in a batch of short ones would cost the batch its
 * length (the skill corpus' rows run from 30 to 450 tokens). Groups are taken shortest first; a
 * chunk closes when the next group would pad it past MAX_PADDING times its real tokens.
 */
export function chunksByLength(lengths: readonly number[]): number[][] {
  const order = lengths.map((_, g) => g).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let real = 0;
  for (const g of order) {
    if (chunk.length > 0 && lengths[g] * (chunk.length + 1) > MAX_PADDING * (real + lengths[g])) {
      chunks.push(chunk);
      chunk = [];
      real = 0;
    }
    chunk.push(g);
    real += lengths[g];
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

export class FullTrainingEngine implements TrainingEngine<readonly number[], FullEngineState> {
  readonly backend = 'onnxruntime';
  readonly #parameters: DecoderParameter[];
  readonly #m: Float32Array[];
  readonly #v: Float32Array[];
  #updates = 0;
  #kept?: KeptForward;
  #grad?: Float32Array[];

  private constructor(
    private readonly sessions: SessionPair,
    /** Trained in place. */
    readonly weights: DecoderWeights,
    readonly precision: Precision,
  ) {
    this.#parameters = decoderParameters(weights);
    this.#m = this.#parameters.map((p) => new Float32Array(p.tensor.length));
    this.#v = this.#parameters.map((p) => new Float32Array(p.tensor.length));
  }

  /** `weights` (float, not 4-bit) are trained in place. */
  static async create(runtime: GraphRuntime, weights: DecoderWeights, options: FullEngineOptions = {}): Promise<FullTrainingEngine> {
    const precision = options.precision ?? 'float32';
    const models = buildDecoderGraphs(weights, precision);
    // As for the LoRA graphs: double graphs keep onnxruntime's basic optimizations (the extended ones fuse into float-only ops).
    const sessionOptions = { ...(precision === 'float64' ? { graphOptimizationLevel: 'basic' } : {}), ...options.sessionOptions };
    return new FullTrainingEngine(await openSessionPair(runtime, models, sessionOptions), weights, precision);
  }

  get updates(): number {
    return this.#updates;
  }

  async forward(groups: EngineBatch<readonly number[]>, options: ForwardOptions): Promise<EngineStats> {
    if (options.reference) throw new InvalidInputError('reference', 'full-parameter training has no frozen base to take as the reference; use a reference policy, or beta 0.');
    if (!(options.temperature > 0)) throw new InvalidInputError('temperature', `must be > 0, got ${String(options.temperature)}.`);
    this.#kept = undefined;
    // Each group's first slot in the batch's order; a group's row is its prompt and every completion but its last token.
    const starts: number[] = [];
    let scored = 0;
    for (const g of groups) {
      starts.push(scored);
      scored += g.completions.reduce((n, c) => n + c.length, 0);
    }
    const lengths = groups.map((g) => g.prompt.length + g.completions.reduce((n, c) => n + Math.max(0, c.length - 1), 0));
    const logps = new Float64Array(scored);
    const entropies = new Float64Array(scored);
    const chunks: KeptChunk[] = [];
    for (const members of chunksByLength(lengths)) {
      const batch = layout(
        members.map((g) => ({ promptIds: groups[g].prompt, completions: groups[g].completions })),
        this.weights.shape.vocabSize,
      );
      const slots = new Int32Array(batch.scored);
      let at = 0;
      for (const g of members) {
        const count = groups[g].completions.reduce((n, c) => n + c.length, 0);
        for (let k = 0; k < count; k++) slots[at++] = starts[g] + k;
      }
      const feeds = batchInputs(this.sessions.runtime, this.precision, this.weights.shape, batch, 1 / options.temperature);
      for (const p of this.#parameters) feeds[p.name] = floatTensor(this.sessions.runtime, this.precision, p.tensor, p.dims);
      const out = await this.sessions.forward.run(feeds);
      // The graph scores a chunk's tokens in its groups' slot order (group, completion, token).
      const chunkLogps = out[GRAPH_IO.logps].data as ArrayLike<number>;
      const chunkEntropies = out[GRAPH_IO.entropies].data as ArrayLike<number>;
      slots.forEach((slot, k) => {
        logps[slot] = Number(chunkLogps[k]);
        entropies[slot] = Number(chunkEntropies[k]);
      });
      chunks.push({ batch, feeds, out, slots });
    }
    this.#kept = { chunks, scored };
    return { logps, entropies };
  }

  async backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    const kept = this.#kept;
    if (!kept) throw new InvalidInputError('backward', 'needs a forward first.');
    this.#kept = undefined;
    const { scored } = kept;
    if (dLogp.length !== scored || dEntropy.length !== scored) throw new InvalidInputError('dLogp', `needs ${scored} entries (one per scored token), got ${dLogp.length} and ${dEntropy.length}.`);
    const grad = this.#parameters.map((p) => new Float32Array(p.tensor.length));
    for (const chunk of kept.chunks) {
      const { runtime } = this.sessions;
      const feeds = backwardFeeds(this.sessions, chunk);
      feeds[GRAPH_IO.dlogps] = floatTensor(runtime, this.precision, Array.from(chunk.slots, (slot) => dLogp[slot]), [chunk.batch.scored]);
      feeds[GRAPH_IO.dentropies] = floatTensor(runtime, this.precision, Array.from(chunk.slots, (slot) => dEntropy[slot]), [chunk.batch.scored]);
      const grads = await this.sessions.backward.run(feeds);
      this.#parameters.forEach((p, k) => {
        const part = grads[weightGradOutput(p.name)].data as ArrayLike<number>;
        const sum = grad[k];
        for (let i = 0; i < sum.length; i++) sum[i] += Number(part[i]);
      });
    }
    this.#grad = grad;
    return globalNorm(this.#grad);
  }

  /** The last backward's gradient, one tensor per weight in decoderParameters' order. */
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

  async read(): Promise<FullEngineState> {
    const copy = (ts: Float32Array[]) => ts.map((t) => t.slice());
    return { weights: copy(this.#parameters.map((p) => p.tensor)), m: copy(this.#m), v: copy(this.#v), updates: this.#updates };
  }

  load(state: FullEngineState): void {
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
    void releaseSessionPair(this.sessions).catch(() => undefined);
  }
}
