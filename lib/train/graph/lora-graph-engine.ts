/**
 * A LoRA adapter trained on onnxruntime's kernels: the forward and backward graphs of
 * lora-graph.ts in two sessions of whichever onnxruntime the caller hands over (onnxruntime-node,
 * onnxruntime-web on WASM or WebGPU). The adapter's A and B are fed as inputs on every call, so
 * an update needs no new graph and no new session.
 *
 * One batch row per group (batch-layout.ts): its prompt once and every completion after it, as the
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
import { batchInputs, floatTensor, gather, layout, type GraphGroup } from './batch-layout.js';

export type { GraphGroup } from './batch-layout.js';

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
    const feeds = batchInputs(this.runtime, this.precision, this.weights.shape, batch, 1 / temperature);
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
    return floatTensor(this.runtime, this.precision, values, dims);
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
