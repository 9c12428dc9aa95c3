/**
 * A LoRA adapter trained on onnxruntime's kernels, one layer at a time: the per-layer and head
 * graphs of layer-graphs.ts in sessions of whichever onnxruntime the caller hands over
 * (onnxruntime-node, onnxruntime-web on WASM or WebGPU). The frozen weights and the adapter's A
 * and B are fed as inputs on every run, so an update needs no new graph, and the layers of one
 * structure share one session; the head's table (the embedding) is fed too, or, in a page, held by
 * the head's own session (head-runs.ts).
 *
 * A forward keeps every layer's activations for the backward when they fit `activationBudget`;
 * past it, only each layer's input (tokens x hidden per layer), and the backward recomputes the
 * layer's activations from it. Rows run in micro-batches of a bounded token count, and the head
 * in chunks of rows, so the [tokens, vocab] logits never exist whole and, recomputing, the memory
 * of a step is the weights plus one micro-batch's layer, whatever the group. The gradients of the
 * micro-batches add up to the whole batch's. `forwardBackward` runs each part's backward right
 * after its forward, so only one part is held at a time and its activations can be kept where
 * the whole batch's could not; with no entropy term the head takes d log p / d hidden in its
 * forward and runs no backward.
 */
import { InvalidInputError, OutOfMemoryError } from '../../errors.js';
import { zerosLike, type LoraAdapter } from '../../lora/adapter.js';
import type { DecoderWeights } from '../../weights/decoder.js';
import type { Precision } from './builder.js';
import { adapterGrad, adapterInput, buildLayerGraphs, LAYER_IO, layerSignature, layerWeightInputs, type Graph } from './layer-graphs.js';
import { HeadRuns, runOn, type HeadTable, type Runner } from './head-runs.js';
import type { LoraGraphConfig } from './lora-graph.js';
import type { GraphRuntime, GraphSession, GraphTensor } from './runtime.js';
import { batchInputs, checkGroups, floatTensor, gather, layout, slotsOf, type Batch } from './batch-layout.js';
import { microBatches, rowsOf, rowWidth, type GraphGroup } from './rows.js';
import { DEFAULT_ACTIVATION_BUDGET, DEFAULT_MICRO_BATCH_TOKENS, headRowsFor, keptActivationBytes, stepParts } from '../memory.js';
import { blockingThreads } from '../../policy/onnx/session-options.js';
import { KeptPool } from './kept-pool.js';
import { isNodeRuntime } from '../../policy/onnx/runtime.js';

export type { GraphGroup } from './batch-layout.js';

export interface LoraGraphsOptions {
  /** Default 'float32'; 'float64' runs the same graphs in double (CPU only). */
  precision?: Precision;
  /** onnxruntime session options (execution providers, threads). */
  sessionOptions?: Record<string, unknown>;
  /** The most padded tokens a micro-batch runs through a layer at once. Default 768 (DEFAULT_MICRO_BATCH_TOKENS). */
  microBatchTokens?: number;
  /** The most scored rows a head run takes at once (its logits are rows x vocab). Default: 4M logits (16 MB). */
  headRows?: number;
  /**
   * Bytes kept activations may take between the forward and the backward (keptActivationBytes):
   * a whole batch's for `forward`, one part's for `forwardBackward`. Past it, only each layer's
   * input is kept and the backward recomputes the rest, about a forward's work more. Default
   * 512 MiB; 0 always recomputes.
   */
  activationBudget?: number;
  /**
   * forwardBackward copies a part's kept activations into one pool (kept-pool.ts) rather than
   * holding onnxruntime's arrays. Default: in Node, whose C allocator kept the pages of those
   * arrays for the process after a step (sampling after it peaked 300-400 MB higher at
   * SmolLM2-135M's shape, 8 x 128); not in a page, where the copies cost about 75 MB more at
   * Qwen2.5-0.5B q4's peak (3626-3635 MB against 3553) and nothing was kept back (BENCHMARKS "scale").
   */
  keptPool?: boolean;
  /**
   * Where the embedding (the tied head's table) and an untied head live (head-runs.ts): 'input',
   * the weights' arrays fed to every head run; 'session', one float32 session that holds them and
   * runs the embedding lookup, the arrays then released (detached: `weights` can build no other
   * graphs; read them again). Default: 'session' in a page, where onnxruntime-web copies every
   * input into its heap for each run, so the table was held twice (Qwen2.5-0.5B's: 545 MB) and
   * copied for every head run; 'input' in Node and in float64.
   */
  headTable?: HeadTable;
}

/** A forward kept for its backward. */
export interface LoraGraphPass {
  /** Per completion (groups flattened in order), the log-probs of its tokens. */
  logprobs: number[][];
  entropies: number[][];
  /** d loss / d (A, B) for the given d loss / d logp (and d loss / d entropy) of every completion token. */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, dentropies?: ReadonlyArray<ArrayLike<number>>): Promise<LoraAdapter>;
}


interface LayerRunners {
  forward: Runner;
  backward: Runner;
  keep: { forward: Runner; backward: Runner; saved: string[] };
}

/** One micro-batch of a forward: its layout, its batch inputs, and every layer's input (x[L] is the last hidden state). */
interface KeptMicroBatch {
  batch: Batch;
  feeds: Record<string, GraphTensor>;
  xs: GraphTensor[];
  /** Per layer, the activations its backward reads, when they were kept. */
  activations?: Array<Record<string, GraphTensor>>;
  /** Its first scored token's slot in the whole batch. */
  offset: number;
  /** Per scored row, d log p(target) / d hidden ([scored, H]), when the forward took it. */
  logpGradient?: Float32Array | Float64Array;
}

export interface ForwardPassOptions {
  /** false: the log-probs only (a reference pass): the same graphs, nothing kept, and the pass has no backward. Default true. */
  backward?: boolean;
  /**
   * false: the backward will get no d loss / d entropy (the loss has no entropy term), so the head
   * takes each row's d log p / d hidden in the forward and runs no backward of its own (a third of
   * the head's work). A non-zero d entropy is still taken, through the head's backward. Default true.
   */
  entropyGradient?: boolean;
}

/**
 * d loss / d log p(y) and d loss / d H for the scored tokens of slots `start` to `end` (whole
 * completions), from their log-probs and entropies: what `forwardBackward` asks after each
 * micro-batch's forward.
 */
export type GraphPartSensitivities = (
  part: { logps: Float64Array; entropies: Float64Array },
  start: number,
  end: number,
) => { dLogp: ArrayLike<number>; dEntropy: ArrayLike<number> };

/** A forward and backward run micro-batch by micro-batch: every completion's numbers and the adapter's gradient. */
export interface LoraGraphStep {
  logprobs: number[][];
  entropies: number[][];
  gradient: LoraAdapter;
}

export class LoraGraphs {
  private constructor(
    private readonly runtime: GraphRuntime,
    private readonly layerRunners: LayerRunners[],
    private readonly head: HeadRuns,
    private readonly weightFeeds: Array<Record<string, GraphTensor>>,
    private readonly sessions: GraphSession[],
    readonly weights: DecoderWeights,
    readonly lora: LoraGraphConfig,
    readonly precision: Precision,
    readonly microBatchTokens: number,
    readonly activationBudget: number,
    /** What create() was given, so `rebuild` makes the same graphs. */
    private readonly options: LoraGraphsOptions,
  ) {
    this.kept = (options.keptPool ?? isNodeRuntime()) ? new KeptPool(runtime, (length) => this.floatArray(length)) : undefined;
  }

  /** The most scored rows a head run takes at once. */
  get headRows(): number {
    return this.head.rows;
  }

  /** Where forwardBackward keeps a part's activations, reused by every part of a step (kept-pool.ts), where it does. */
  private readonly kept: KeptPool | undefined;

  static async create(runtime: GraphRuntime, weights: DecoderWeights, lora: LoraGraphConfig, options: LoraGraphsOptions = {}): Promise<LoraGraphs> {
    const precision = options.precision ?? 'float32';
    const microBatchTokens = options.microBatchTokens ?? DEFAULT_MICRO_BATCH_TOKENS;
    if (!Number.isInteger(microBatchTokens) || microBatchTokens < 1) throw new InvalidInputError('microBatchTokens', `must be a positive integer, got ${String(microBatchTokens)}.`);
    const headRows = options.headRows ?? headRowsFor(weights.shape);
    if (!Number.isInteger(headRows) || headRows < 1) throw new InvalidInputError('headRows', `must be a positive integer, got ${String(headRows)}.`);
    const { hiddenSize: H, vocabSize: V } = weights.shape;
    if (weights.embedding.length !== V * H) {
      throw new InvalidInputError('weights', `the embedding has ${weights.embedding.length} values, not vocab x hidden (${V * H}): a LoRA engine in a page moves it into its session (headTable 'session'), so read the weights again to build other graphs.`);
    }
    const activationBudget = options.activationBudget ?? DEFAULT_ACTIVATION_BUDGET;
    if (!(activationBudget >= 0)) throw new InvalidInputError('activationBudget', `must be a number of bytes >= 0, got ${String(activationBudget)}.`);
    // onnxruntime's extended optimizations fuse into contrib ops that have float kernels only
    // (x sigmoid(x) into QuickGelu): double graphs keep the basic ones.
    // Threads that block: a step's few-hundred-op graphs run one after another, and pool threads
    // spinning after each op to catch the next burned about a third of a step's CPU time (BENCHMARKS, scale).
    const sessionOptions = { ...(precision === 'float64' ? { graphOptimizationLevel: 'basic' } : {}), ...options.sessionOptions, extra: blockingThreads(options.sessionOptions?.extra) };
    const sessions: GraphSession[] = [];
    const open = async (graph: Graph, options: Record<string, unknown> = sessionOptions): Promise<Runner> => {
      const session = await runtime.InferenceSession.create(graph.model, options);
      sessions.push(session);
      return { session, inputs: graph.inputs };
    };
    try {
      const bySignature = new Map<string, LayerRunners>();
      const layerRunners: LayerRunners[] = [];
      for (const layer of weights.layers) {
        const signature = layerSignature(layer, precision);
        let runners = bySignature.get(signature);
        if (!runners) {
          const graphs = buildLayerGraphs(layer, weights.shape, lora, precision);
          runners = {
            forward: await open(graphs.forward),
            backward: await open(graphs.backward),
            keep: { forward: await open(graphs.keep.forward), backward: await open(graphs.keep.backward), saved: graphs.keep.saved },
          };
          bySignature.set(signature, runners);
        }
        layerRunners.push(runners);
      }
      const headTable = options.headTable ?? (isNodeRuntime() || precision === 'float64' ? 'input' : 'session');
      const head = await HeadRuns.create(runtime, weights, precision, headTable, headRows, open, sessionOptions);
      const tensor = (type: 'float' | 'float16' | 'uint8', data: Float32Array | Uint16Array | Uint8Array, dims: number[]) =>
        type === 'float' ? floatTensor(runtime, precision, data as Float32Array, dims) : new runtime.Tensor(type, data, dims);
      const weightFeeds = weights.layers.map((layer) => Object.fromEntries(layerWeightInputs(layer, weights.shape, precision).map((i) => [i.name, tensor(i.type, i.data, i.dims)])));
      return new LoraGraphs(runtime, layerRunners, head, weightFeeds, sessions, weights, lora, precision, microBatchTokens, activationBudget, options);
    } catch (error) {
      await Promise.all(sessions.map((s) => s.release?.()));
      throw error;
    }
  }

  async release(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.release?.()));
  }

  /**
   * How to make the same graphs again, in new sessions of the same runtime with the same options,
   * for weights read again (a LoRA engine that released its weights between steps,
   * `releaseWeights`): the same runs, so the same numbers bit for bit. The function holds the
   * settings only, not these graphs' weights or sessions.
   */
  rebuilder(): (weights: DecoderWeights) => Promise<LoraGraphs> {
    const { runtime, lora, options } = this;
    return (weights) => LoraGraphs.create(runtime, weights, lora, options);
  }

  /**
   * Runs the decoder on `groups` under `adapter`; the log-probs are taken under `temperature`. An
   * allocation failure is an OutOfMemoryError.
   */
  async forward(adapter: LoraAdapter, groups: readonly GraphGroup[], temperature = 1, options: ForwardPassOptions = {}): Promise<LoraGraphPass> {
    const { whole, invT, micro } = this.begin(groups, temperature);
    const backward = options.backward !== false;
    try {
      const adapterFeeds = this.adapterFeeds(adapter);
      const logps = new Float64Array(whole.scored);
      const entropies = new Float64Array(whole.scored);
      const kept: KeptMicroBatch[] = [];
      let offset = 0;
      // A pass for its log-probs alone runs the graphs a kept pass would (so its numbers are the same bit for bit) and drops what they keep.
      const keep = this.keepsActivations(micro);
      for (const rows of micro) {
        const part = await this.forwardPart(rows, adapterFeeds, invT, offset, { keep, backward, logpGradient: backward && options.entropyGradient === false });
        logps.set(part.logps, offset);
        entropies.set(part.entropies, offset);
        if (backward) kept.push(part.kept);
        offset += part.kept.batch.scored;
      }
      return {
        logprobs: splitRows(logps, whole),
        entropies: splitRows(entropies, whole),
        backward: async (dlogps, dentropies) => {
          if (!backward) throw new InvalidInputError('backward', 'this forward was run for its log-probs only ({ backward: false }).');
          const dLogp = gather(dlogps, whole, 'dlogps');
          const dEntropy = dentropies ? gather(dentropies, whole, 'dentropies') : new Float64Array(whole.scored);
          const grad = zerosLike(adapter);
          try {
            for (const part of kept) await this.backward(part, dLogp, dEntropy, adapterFeeds, grad, invT);
          } catch (error) {
            throw this.memoryError(error, whole.scored);
          }
          return grad;
        },
      };
    } catch (error) {
      throw this.memoryError(error, whole.scored);
    }
  }

  /**
   * The forward and the backward part by part: each part's forward, then `sensitivities` for its
   * scored tokens (whole completions, in slot order), then its backward at once, so a part's
   * activations are held only through its own backward. A part is a micro-batch, or, where a
   * micro-batch's activations exceed `activationBudget`, a share of its rows whose activations fit
   * (kept: no layer runs twice); a micro-batch with no such share recomputes, as `forward` does.
   * The gradient is the same as `forward` then `backward` with the same sensitivities.
   */
  async forwardBackward(adapter: LoraAdapter, groups: readonly GraphGroup[], temperature: number, sensitivities: GraphPartSensitivities, options: Pick<ForwardPassOptions, 'entropyGradient'> = {}): Promise<LoraGraphStep> {
    const { whole, invT, micro } = this.begin(groups, temperature);
    try {
      const adapterFeeds = this.adapterFeeds(adapter);
      const logps = new Float64Array(whole.scored);
      const entropies = new Float64Array(whole.scored);
      const grad = zerosLike(adapter);
      let offset = 0;
      for (const { rows, keep } of this.parts(micro)) {
        // One part is held at a time, so each part keeps its activations where the last one did.
        this.kept?.reset();
        // Its backward reads the part's own sensitivities, slot 0 first.
        const part = await this.forwardPart(rows, adapterFeeds, invT, 0, { keep, backward: true, logpGradient: options.entropyGradient === false, ...(this.kept ? { pool: this.kept } : {}) });
        logps.set(part.logps, offset);
        entropies.set(part.entropies, offset);
        const end = offset + part.kept.batch.scored;
        const { dLogp, dEntropy } = sensitivities({ logps: part.logps, entropies: part.entropies }, offset, end);
        if (dLogp.length !== end - offset || dEntropy.length !== end - offset) {
          throw new InvalidInputError('sensitivities', `must give ${end - offset} values of dLogp and dEntropy for slots ${offset}-${end}, got ${dLogp.length} and ${dEntropy.length}.`);
        }
        await this.backward(part.kept, Float64Array.from(dLogp), Float64Array.from(dEntropy), adapterFeeds, grad, invT);
        offset = end;
      }
      return { logprobs: splitRows(logps, whole), entropies: splitRows(entropies, whole), gradient: grad };
    } catch (error) {
      throw this.memoryError(error, whole.scored);
    } finally {
      this.kept?.release();
    }
  }

  /** The checked batch's slots, 1 / T and its micro-batches. */
  private begin(groups: readonly GraphGroup[], temperature: number) {
    if (!(temperature > 0)) throw new InvalidInputError('temperature', `must be > 0, got ${String(temperature)}.`);
    checkGroups(groups, this.weights.shape.vocabSize);
    return { whole: slotsOf(groups), invT: 1 / temperature, micro: microBatches(rowsOf(groups, this.weights.shape), this.microBatchTokens) };
  }

  /**
   * One micro-batch's forward: its log-probs and entropies, and what its backward reads (every
   * layer's input, the activations when `keep`, each scored row's d log p / d hidden when
   * `logpGradient`); `backward` false keeps only what the next layer reads. With a `pool` the
   * activations are copied into it (kept-pool.ts).
   */
  private async forwardPart(
    rows: readonly GraphGroup[],
    adapterFeeds: Array<Record<string, GraphTensor>>,
    invT: number,
    offset: number,
    options: { keep: boolean; backward: boolean; logpGradient: boolean; pool?: KeptPool },
  ): Promise<{ logps: Float64Array; entropies: Float64Array; kept: KeptMicroBatch }> {
    const { keep, backward } = options;
    const batch = layout(rows, this.weights.shape.vocabSize);
    const feeds = batchInputs(this.runtime, this.precision, this.weights.shape, batch, invT);
    const xs = [await this.head.embed(batch.ids)];
    const activations: Array<Record<string, GraphTensor>> = [];
    for (let l = 0; l < this.weights.layers.length; l++) {
      const runners = this.layerRunners[l];
      const out = await runOn(keep ? runners.keep.forward : runners.forward, { ...this.weightFeeds[l], ...adapterFeeds[l], ...feeds, [LAYER_IO.x]: xs[xs.length - 1] });
      // A pass for its log-probs alone keeps no layer's input, only the one the next layer reads.
      if (!backward) xs.pop();
      xs.push(out[LAYER_IO.out]);
      if (keep && backward) activations.push(Object.fromEntries(runners.keep.saved.map((name) => [name, options.pool ? options.pool.hold(out[name]) : out[name]])));
    }
    const H = this.weights.shape.hiddenSize;
    const logps = new Float64Array(batch.scored);
    const entropies = new Float64Array(batch.scored);
    const logpGradient = options.logpGradient ? this.floatArray(batch.scored * H) : undefined;
    for (const [start, end] of this.head.chunks(batch)) {
      const chunk = await this.head.forward(batch, xs[xs.length - 1], start, end, invT, logpGradient !== undefined);
      for (let k = start; k < end; k++) {
        logps[k] = Number(chunk.logps[k - start]);
        entropies[k] = Number(chunk.entropies[k - start]);
      }
      if (chunk.logpGradient) logpGradient?.set(chunk.logpGradient, start * H);
    }
    return { logps, entropies, kept: { batch, feeds, xs, offset, ...(keep ? { activations } : {}), ...(logpGradient ? { logpGradient } : {}) } };
  }

  /** Adds one micro-batch's d loss / d (A, B) into `grad`. */
  private async backward(micro: KeptMicroBatch, dLogp: Float64Array, dEntropy: Float64Array, adapterFeeds: Array<Record<string, GraphTensor>>, grad: LoraAdapter, invT: number): Promise<void> {
    const { batch, feeds, xs, offset, activations, logpGradient } = micro;
    const H = this.weights.shape.hiddenSize;
    const last = xs[xs.length - 1];
    const dLast = this.floatArray(last.data.length);
    for (const [start, end] of this.head.chunks(batch)) {
      // Without an entropy term a row's d hidden is its d loss / d logp times the forward's d logp / d hidden; with one, the head runs its backward.
      if (logpGradient && !hasNonZero(dEntropy, offset + start, offset + end)) {
        for (let k = start; k < end; k++) {
          const row = batch.scoreRows[k] * H;
          const d = dLogp[offset + k];
          for (let i = 0; i < H; i++) dLast[row + i] += d * logpGradient[k * H + i];
        }
        continue;
      }
      const dHidden = await this.head.backward(batch, last, start, end, invT, dLogp.subarray(offset + start, offset + end), dEntropy.subarray(offset + start, offset + end));
      // A row can predict several scored tokens (a prompt's last row predicts every completion's first): their gradients add.
      for (let k = start; k < end; k++) {
        const row = batch.scoreRows[k] * H;
        for (let i = 0; i < H; i++) dLast[row + i] += Number(dHidden[(k - start) * H + i]);
      }
    }
    let dy = this.floats(dLast, [batch.rows * batch.width, H]);
    for (let l = this.weights.layers.length - 1; l >= 0; l--) {
      const runners = this.layerRunners[l];
      const runner = activations ? runners.keep.backward : runners.backward;
      const out = await runOn(runner, { ...this.weightFeeds[l], ...adapterFeeds[l], ...feeds, ...activations?.[l], [LAYER_IO.x]: xs[l], [LAYER_IO.dy]: dy });
      const layer = grad.layers[l];
      for (const m of this.lora.targetModules) {
        const pair = layer[m]!;
        addInto(pair.A, out[adapterGrad(m, 'A')].data as ArrayLike<number>);
        addInto(pair.B, out[adapterGrad(m, 'B')].data as ArrayLike<number>);
      }
      if (l > 0) dy = out[LAYER_IO.dx];
    }
  }

  /**
   * The parts a step run part by part takes each micro-batch in (stepParts, as the estimate counts them): parts of rows
   * whose activations fit the budget, kept, or the micro-batch whole, recomputed.
   */
  private parts(micro: readonly GraphGroup[][]): Array<{ rows: readonly GraphGroup[]; keep: boolean }> {
    const { r, targetModules } = this.lora;
    return micro.flatMap((rows) => {
      let next = 0;
      return stepParts(this.weights.shape, r, targetModules.length, [{ rows: rows.length, width: Math.max(...rows.map(rowWidth)) }], this.activationBudget).map((part) => ({ rows: rows.slice(next, (next += part.rows)), keep: part.keep }));
    });
  }

  /** Whether these micro-batches' activations fit the budget, so the backward need not recompute them. */
  private keepsActivations(micro: readonly GraphGroup[][]): boolean {
    const rows = micro.map((m) => ({ rows: m.length, width: Math.max(...m.map(rowWidth)) }));
    return keptActivationBytes(this.weights.shape, this.lora.r, this.lora.targetModules.length, rows) <= this.activationBudget;
  }

  /** An allocation failure as OutOfMemoryError, saying what would fit; any other error as it is. */
  private memoryError(error: unknown, tokens: number): unknown {
    if (!isAllocationFailure(error)) return error;
    return new OutOfMemoryError(
      `The LoRA step ran out of memory (${tokens} tokens, micro-batches of ${this.microBatchTokens}, activations kept up to ${Math.round(this.activationBudget / 2 ** 20)} MB, else recomputed). ` +
        'Nothing was updated. Sample fewer completions per group or shorter replies, take a 4-bit model, or give the run a smaller memoryBudget (estimateStepMemory says what a setting needs).',
      { cause: error },
    );
  }

  /** Zeros in the graphs' precision. */
  private floatArray(length: number): Float32Array | Float64Array {
    return this.precision === 'float64' ? new Float64Array(length) : new Float32Array(length);
  }

  private floats(values: ArrayLike<number>, dims: number[]): GraphTensor {
    return floatTensor(this.runtime, this.precision, values, dims);
  }

  private adapterFeeds(adapter: LoraAdapter): Array<Record<string, GraphTensor>> {
    if (adapter.layers.length !== this.weights.layers.length) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${this.weights.layers.length}.`);
    if (adapter.config.r !== this.lora.r || adapter.scale !== this.lora.scale) throw new InvalidInputError('adapter', `has rank ${adapter.config.r} and scale ${adapter.scale}; the graphs were built for rank ${this.lora.r} and scale ${this.lora.scale}.`);
    return adapter.layers.map((layer, l) => {
      const feeds: Record<string, GraphTensor> = {};
      for (const m of this.lora.targetModules) {
        const pair = layer[m];
        if (!pair) throw new InvalidInputError('adapter', `has no ${m} in layer ${l}; the graphs adapt ${this.lora.targetModules.join(', ')}.`);
        feeds[adapterInput(m, 'A')] = this.floats(pair.A, [this.lora.r, pair.inDim]);
        feeds[adapterInput(m, 'B')] = this.floats(pair.B, [pair.outDim, this.lora.r]);
      }
      return feeds;
    });
  }
}

/** Per completion, its tokens' values out of the batch's flat slots. */
function splitRows(values: Float64Array, whole: ReturnType<typeof slotsOf>): number[][] {
  return whole.lengths.map((n, c) => Array.from(values.subarray(whole.offsets[c], whole.offsets[c] + n)));
}

function hasNonZero(values: Float64Array, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (values[k] !== 0) return true;
  return false;
}

function addInto(target: Float32Array, values: ArrayLike<number>): void {
  for (let i = 0; i < target.length; i++) target[i] += Number(values[i]);
}

/** Whether `error` is a runtime's failure to allocate: onnxruntime's bad_alloc, an ArrayBuffer or a WebAssembly memory that could not grow. */
export function isAllocationFailure(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /bad_alloc|out of memory|Array buffer allocation failed|Cannot enlarge memory|could not allocate/i.test(message);
}
