/**
 * A LoRA adapter trained on onnxruntime's kernels: the forward and backward graphs of
 * lora-graph.ts in two sessions of whichever onnxruntime the caller hands over (onnxruntime-node,
 * onnxruntime-web on WASM or WebGPU). The adapter's A and B are fed as inputs on every call, so
 * an update needs no new graph and no new session.
 *
 * One batch row per completion (its prompt, then the completion), right-padded to the longest:
 * under the causal mask no scored position sees the padding, so every row attends exactly as the
 * scoring pass does. The forward's activations stay in onnxruntime's tensors until the backward
 * reads them.
 */
import { InvalidInputError } from '../../errors.js';
import { zerosLike, type LoraAdapter } from '../../lora/adapter.js';
import type { DecoderWeights } from '../../lora/weights.js';
import { LORA_MODULES } from '../../lora/weights.js';
import type { Precision } from './builder.js';
import { buildLoraGraphs, GRAPH_IO, loraGradOutput, loraInput, type LoraGraphConfig } from './lora-graph.js';
import type { GraphRuntime, GraphSession, GraphTensor } from './runtime.js';

/** A prompt and its completions (token ids); the prompt has at least one token. */
export interface GraphGroup {
  promptIds: readonly number[];
  completions: ReadonlyArray<readonly number[]>;
}

export interface LoraGraphEngineOptions {
  /** Default 'float32'; 'float64' runs the same graphs in double (CPU only). */
  precision?: Precision;
  /** onnxruntime session options (execution providers, threads). */
  sessionOptions?: Record<string, unknown>;
}

/** A forward kept for its backward. */
export interface LoraGraphPass {
  /** Per completion (groups flattened in order), the log-probs of its tokens. */
  logprobs: number[][];
  entropies: number[][];
  /** d loss / d (A, B) for the given d loss / d logp (and d loss / d entropy) of every completion token. */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, dentropies?: ReadonlyArray<ArrayLike<number>>): Promise<LoraAdapter>;
}

/** A large negative bias rather than -Infinity: a fully masked row can never appear, and the sums stay finite. */
const MASKED = -3.4028234663852886e38;

export class LoraGraphEngine {
  private constructor(
    private readonly runtime: GraphRuntime,
    private readonly forwardSession: GraphSession,
    private readonly backwardSession: GraphSession,
    private readonly saved: string[],
    private readonly shared: string[],
    readonly weights: DecoderWeights,
    readonly lora: LoraGraphConfig,
    readonly precision: Precision,
  ) {}

  static async create(runtime: GraphRuntime, weights: DecoderWeights, lora: LoraGraphConfig, options: LoraGraphEngineOptions = {}): Promise<LoraGraphEngine> {
    const precision = options.precision ?? 'float32';
    const models = buildLoraGraphs(weights, lora, precision);
    // onnxruntime's extended optimizations fuse into contrib ops that have float kernels only
    // (x sigmoid(x) into QuickGelu): double graphs keep the basic ones.
    const sessionOptions = { ...(precision === 'float64' ? { graphOptimizationLevel: 'basic' } : {}), ...options.sessionOptions };
    const forward = await runtime.InferenceSession.create(models.forward, sessionOptions);
    const backward = await runtime.InferenceSession.create(models.backward, sessionOptions);
    return new LoraGraphEngine(runtime, forward, backward, models.saved, models.sharedInputs, weights, lora, precision);
  }

  async release(): Promise<void> {
    await Promise.all([this.forwardSession.release?.(), this.backwardSession.release?.()]);
  }

  /** Runs the forward graph of `groups` under `adapter`; the log-probs are taken under `temperature`. */
  async forward(adapter: LoraAdapter, groups: readonly GraphGroup[], temperature = 1): Promise<LoraGraphPass> {
    if (!(temperature > 0)) throw new InvalidInputError('temperature', `must be > 0, got ${String(temperature)}.`);
    const batch = layout(groups, this.weights.shape.vocabSize);
    const feeds = this.inputs(batch, 1 / temperature);
    this.adapterFeeds(adapter, feeds);
    const out = await this.forwardSession.run(feeds);
    const logps = out[GRAPH_IO.logps].data as ArrayLike<number>;
    const entropies = out[GRAPH_IO.entropies].data as ArrayLike<number>;
    const split = (values: ArrayLike<number>) => batch.lengths.map((n, c) => Array.from({ length: n }, (_, t) => Number(values[batch.offsets[c] + t])));
    return {
      logprobs: split(logps),
      entropies: split(entropies),
      backward: async (dlogps, dentropies) => {
        const backFeeds: Record<string, GraphTensor> = {};
        for (const name of this.saved) backFeeds[name] = out[name];
        for (const name of this.shared) backFeeds[name] = feeds[name];
        backFeeds[GRAPH_IO.dlogps] = this.floats(gather(dlogps, batch, 'dlogps'), [batch.scored]);
        backFeeds[GRAPH_IO.dentropies] = this.floats(dentropies ? gather(dentropies, batch, 'dentropies') : new Float64Array(batch.scored), [batch.scored]);
        const grads = await this.backwardSession.run(backFeeds);
        const grad = zerosLike(adapter);
        grad.layers.forEach((layer, l) => {
          for (const m of LORA_MODULES) {
            const pair = layer[m];
            if (!pair) continue;
            pair.A.set(grads[loraGradOutput(l, m, 'A')].data as ArrayLike<number>);
            pair.B.set(grads[loraGradOutput(l, m, 'B')].data as ArrayLike<number>);
          }
        });
        return grad;
      },
    };
  }

  private floats(values: ArrayLike<number>, dims: number[]): GraphTensor {
    return this.precision === 'float64'
      ? new this.runtime.Tensor('float64', Float64Array.from(values), dims)
      : new this.runtime.Tensor('float32', values instanceof Float32Array ? values : Float32Array.from(values), dims);
  }

  private inputs(batch: Batch, invTemperature: number): Record<string, GraphTensor> {
    const { rows, width } = batch;
    const { headDim: D, ropeTheta } = this.weights.shape;
    const cos = new Float64Array(width * D);
    const sin = new Float64Array(width * D);
    for (let p = 0; p < width; p++) {
      for (let i = 0; i < D / 2; i++) {
        const angle = p / ropeTheta ** ((2 * i) / D);
        cos[p * D + i] = cos[p * D + i + D / 2] = Math.cos(angle);
        sin[p * D + i] = sin[p * D + i + D / 2] = Math.sin(angle);
      }
    }
    const bias = new Float64Array(width * width);
    for (let i = 0; i < width; i++) for (let j = i + 1; j < width; j++) bias[i * width + j] = MASKED;
    const int64 = (values: ArrayLike<number>, dims: number[]) => new this.runtime.Tensor('int64', BigInt64Array.from(Array.from(values), BigInt), dims);
    return {
      [GRAPH_IO.inputIds]: int64(batch.ids, [rows, width]),
      [GRAPH_IO.cos]: this.floats(cos, [1, 1, width, D]),
      [GRAPH_IO.sin]: this.floats(sin, [1, 1, width, D]),
      [GRAPH_IO.bias]: this.floats(bias, [1, 1, width, width]),
      [GRAPH_IO.rows]: int64(batch.scoreRows, [batch.scored]),
      [GRAPH_IO.targets]: int64(batch.targets, [batch.scored]),
      [GRAPH_IO.invTemperature]: this.floats([invTemperature], []),
    };
  }

  private adapterFeeds(adapter: LoraAdapter, feeds: Record<string, GraphTensor>): void {
    if (adapter.layers.length !== this.weights.layers.length) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${this.weights.layers.length}.`);
    if (adapter.config.r !== this.lora.r || adapter.scale !== this.lora.scale) throw new InvalidInputError('adapter', `has rank ${adapter.config.r} and scale ${adapter.scale}; the graphs were built for rank ${this.lora.r} and scale ${this.lora.scale}.`);
    adapter.layers.forEach((layer, l) => {
      for (const m of this.lora.targetModules) {
        const pair = layer[m];
        if (!pair) throw new InvalidInputError('adapter', `has no ${m} in layer ${l}; the graphs adapt ${this.lora.targetModules.join(', ')}.`);
        feeds[loraInput(l, m, 'A')] = this.floats(pair.A, [this.lora.r, pair.inDim]);
        feeds[loraInput(l, m, 'B')] = this.floats(pair.B, [pair.outDim, this.lora.r]);
      }
    });
  }
}

interface Batch {
  rows: number;
  width: number;
  ids: number[];
  scored: number;
  scoreRows: number[];
  targets: number[];
  /** Per completion: its first scored entry and its token count. */
  offsets: number[];
  lengths: number[];
}

function layout(groups: readonly GraphGroup[], vocabSize: number): Batch {
  if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of { promptIds, completions }.');
  const sequences: number[][] = [];
  const promptLengths: number[] = [];
  for (const [g, group] of groups.entries()) {
    if (group.promptIds.length === 0) throw new InvalidInputError(`groups[${g}].promptIds`, 'needs at least one token.');
    for (const [c, completion] of group.completions.entries()) {
      if (completion.length === 0) throw new InvalidInputError(`groups[${g}].completions[${c}]`, 'is empty; drop empty completions before training.');
      const tokens = [...group.promptIds, ...completion];
      for (const t of tokens) if (!Number.isInteger(t) || t < 0 || t >= vocabSize) throw new InvalidInputError(`groups[${g}]`, `has token ${t}, outside the vocabulary of ${vocabSize}.`);
      sequences.push(tokens);
      promptLengths.push(group.promptIds.length);
    }
  }
  // The last token is only ever a target.
  const width = Math.max(...sequences.map((s) => s.length)) - 1;
  const ids: number[] = [];
  const scoreRows: number[] = [];
  const targets: number[] = [];
  const offsets: number[] = [];
  const lengths: number[] = [];
  sequences.forEach((tokens, row) => {
    for (let t = 0; t < width; t++) ids.push(tokens[Math.min(t, tokens.length - 2)]);
    offsets.push(targets.length);
    lengths.push(tokens.length - promptLengths[row]);
    for (let t = promptLengths[row]; t < tokens.length; t++) {
      scoreRows.push(row * width + t - 1);
      targets.push(tokens[t]);
    }
  });
  return { rows: sequences.length, width, ids, scored: targets.length, scoreRows, targets, offsets, lengths };
}

function gather(values: ReadonlyArray<ArrayLike<number>>, batch: Batch, what: string): Float64Array {
  if (values.length !== batch.lengths.length) throw new InvalidInputError(what, `has ${values.length} rows for ${batch.lengths.length} completions.`);
  const out = new Float64Array(batch.scored);
  batch.lengths.forEach((n, c) => {
    if (values[c].length !== n) throw new InvalidInputError(`${what}[${c}]`, `has ${values[c].length} entries for ${n} completion tokens.`);
    for (let t = 0; t < n; t++) out[batch.offsets[c] + t] = values[c][t];
  });
  return out;
}
