/**
 * A LoRA adapter trained on onnxruntime's kernels: the forward and backward graphs of
 * lora-graph.ts in two sessions of whichever onnxruntime the caller hands over (onnxruntime-node,
 * onnxruntime-web on WASM or WebGPU). The adapter's A and B are fed as inputs on every call, so
 * an update needs no new graph and no new session.
 *
 * One batch row per group (layout below): its prompt once and every completion after it, as the
 * scoring pass runs the prompt once, so the same tokens cost the same. The forward's activations
 * stay in onnxruntime's tensors until the backward reads them.
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
    const cos = new Float64Array(rows * width * D);
    const sin = new Float64Array(rows * width * D);
    batch.positions.forEach((p, at) => {
      for (let i = 0; i < D / 2; i++) {
        const angle = p / ropeTheta ** ((2 * i) / D);
        cos[at * D + i] = cos[at * D + i + D / 2] = Math.cos(angle);
        sin[at * D + i] = sin[at * D + i + D / 2] = Math.sin(angle);
      }
    });
    const int64 = (values: ArrayLike<number>, dims: number[]) => new this.runtime.Tensor('int64', BigInt64Array.from(Array.from(values), BigInt), dims);
    return {
      [GRAPH_IO.inputIds]: int64(batch.ids, [rows, width]),
      [GRAPH_IO.cos]: this.floats(cos, [rows, 1, width, D]),
      [GRAPH_IO.sin]: this.floats(sin, [rows, 1, width, D]),
      [GRAPH_IO.bias]: this.floats(batch.bias, [rows, 1, width, width]),
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
  /** Per row and column: the token's position (its rotary angle). */
  positions: number[];
  /** [rows, width, width]: 0 where a query may attend a key, MASKED elsewhere. */
  bias: Float64Array;
  scored: number;
  scoreRows: number[];
  targets: number[];
  /** Per completion: its first scored entry and its token count. */
  offsets: number[];
  lengths: number[];
}

/**
 * One row per group: the prompt once, then each completion but its last token (which is only a
 * target). A completion's tokens see the prompt and their own earlier tokens, at positions that
 * continue the prompt's, exactly as when scored alone; the prompt's last row predicts every
 * completion's first token.
 */
function layout(groups: readonly GraphGroup[], vocabSize: number): Batch {
  if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of { promptIds, completions }.');
  const rows = groups.map((group, g) => {
    if (group.promptIds.length === 0) throw new InvalidInputError(`groups[${g}].promptIds`, 'needs at least one token.');
    const check = (t: number) => {
      if (!Number.isInteger(t) || t < 0 || t >= vocabSize) throw new InvalidInputError(`groups[${g}]`, `has token ${t}, outside the vocabulary of ${vocabSize}.`);
    };
    group.promptIds.forEach(check);
    const P = group.promptIds.length;
    const ids = [...group.promptIds];
    const positions = ids.map((_, i) => i);
    // -1: the prompt, seen by every completion; c: completion c's own tokens.
    const segment = ids.map(() => -1);
    const picks: Array<{ column: number; target: number }> = [];
    group.completions.forEach((completion: readonly number[], c: number) => {
      if (completion.length === 0) throw new InvalidInputError(`groups[${g}].completions[${c}]`, 'is empty; drop empty completions before training.');
      completion.forEach(check);
      picks.push({ column: P - 1, target: completion[0] });
      for (let j = 0; j + 1 < completion.length; j++) {
        ids.push(completion[j]);
        positions.push(P + j);
        segment.push(c);
        picks.push({ column: ids.length - 1, target: completion[j + 1] });
      }
    });
    return { ids, positions, segment, picks, lengths: group.completions.map((c: readonly number[]) => c.length) };
  });
  const width = Math.max(...rows.map((r) => r.ids.length));
  const batch: Batch = { rows: rows.length, width, ids: [], positions: [], bias: new Float64Array(rows.length * width * width).fill(MASKED), scored: 0, scoreRows: [], targets: [], offsets: [], lengths: [] };
  rows.forEach((row, b) => {
    const n = row.ids.length;
    for (let i = 0; i < width; i++) {
      batch.ids.push(i < n ? row.ids[i] : row.ids[n - 1]);
      batch.positions.push(i < n ? row.positions[i] : 0);
      const at = (b * width + i) * width;
      // A padding column attends only to itself: its softmax stays finite and nothing reads it.
      if (i >= n) batch.bias[at + i] = 0;
      else for (let j = 0; j <= i; j++) if (row.segment[j] === -1 || row.segment[j] === row.segment[i]) batch.bias[at + j] = 0;
    }
    let pick = 0;
    for (const length of row.lengths) {
      batch.offsets.push(batch.targets.length);
      batch.lengths.push(length);
      for (let t = 0; t < length; t++, pick++) {
        batch.scoreRows.push(b * width + row.picks[pick].column);
        batch.targets.push(row.picks[pick].target);
      }
    }
  });
  batch.scored = batch.targets.length;
  return batch;
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
