/**
 * The LoRA graphs' runs at both ends of the decoder: the embedding rows a forward starts from,
 * and the final norm and head on chunks of scored rows (a chunk's logits are rows x vocab, never
 * the whole batch's). Where the table (the embedding, and an untied head) lives:
 *
 *   'input'    in the weights' own arrays, fed to each head run, and the rows looked up in
 *              JavaScript: onnxruntime-node reads an input where it lies.
 *   'session'  in one session that holds it as an initializer (buildHeadTableGraph) and runs the
 *              lookup too; the arrays are then released. onnxruntime-web copies every input into
 *              its WebAssembly heap for each run, so there the table was held twice, the array
 *              and the heap's room for its copy, and copied again for every head run
 *              (Qwen2.5-0.5B's embedding: 545 MB).
 */
import { InvalidInputError } from '../../errors.js';
import type { DecoderWeights } from '../../weights/decoder.js';
import { floatTensor, type Batch } from './batch-layout.js';
import type { Precision } from './builder.js';
import { buildHeadGraphs, buildHeadTableGraph, HEAD_TABLE_RUN, LAYER_IO, TABLE_HEAD_IO, type Graph } from './layer-graphs.js';
import { GRAPH_IO } from './lora-graph.js';
import type { GraphRuntime, GraphSession, GraphTensor } from './runtime.js';
import { detach } from '../../policy/onnx/detach.js';

export type HeadTable = 'input' | 'session';

/** A graph's session and the inputs a run feeds it. */
export interface Runner {
  session: GraphSession;
  inputs: string[];
}

/** Opens `graph` in a session (kept for release by the caller) with `options`. */
export type OpenGraph = (graph: Graph, options: Record<string, unknown>) => Promise<Runner>;

/** Runs `runner` on the inputs it takes from `pool`. */
export function runOn(runner: Runner, pool: Record<string, GraphTensor>): Promise<Record<string, GraphTensor>> {
  const feeds: Record<string, GraphTensor> = {};
  for (const name of runner.inputs) feeds[name] = pool[name];
  return runner.session.run(feeds);
}

/** A head chunk's numbers: per scored row its log p(target) and entropy, and d log p / d hidden ([rows, H]) when asked for. */
export interface HeadChunk {
  logps: ArrayLike<number>;
  entropies: ArrayLike<number>;
  logpGradient?: Float32Array | Float64Array;
}

type Sessions = { table: 'input'; forward: Runner; gradient: Runner; backward: Runner } | { table: 'session'; runner: Runner };

export class HeadRuns {
  private constructor(
    private readonly runtime: GraphRuntime,
    private readonly weights: DecoderWeights,
    private readonly precision: Precision,
    private readonly sessions: Sessions,
    /** The feeds every head run takes: the final norm, and with the table as an input, the table. */
    private readonly fixed: Record<string, GraphTensor>,
    /** The most scored rows a head run takes at once. */
    readonly rows: number,
  ) {}

  /**
   * The head's sessions for `weights` in `table`'s placement ('session' is float32 only). With
   * 'session', the embedding's and the untied head's arrays are released once the session holds
   * them (detached, where they are arrays of their own): `weights` can no longer build graphs.
   */
  static async create(runtime: GraphRuntime, weights: DecoderWeights, precision: Precision, table: HeadTable, rows: number, open: OpenGraph, sessionOptions: Record<string, unknown>): Promise<HeadRuns> {
    const { hiddenSize: H, vocabSize: V } = weights.shape;
    const finalNorm = floatTensor(runtime, precision, weights.finalNorm, [H]);
    const options = headSessionOptions(sessionOptions);
    if (table === 'input') {
      const graphs = buildHeadGraphs(weights.shape, !weights.lmHead, precision);
      const sessions = { table, forward: await open(graphs.forward, options), gradient: await open(graphs.gradient, options), backward: await open(graphs.backward, options) } as const;
      const head = weights.lmHead ? floatTensor(runtime, precision, weights.lmHead, [H, V]) : floatTensor(runtime, precision, weights.embedding, [V, H]);
      return new HeadRuns(runtime, weights, precision, sessions, { [LAYER_IO.finalNorm]: finalNorm, [LAYER_IO.head]: head }, rows);
    }
    if (precision !== 'float32') throw new InvalidInputError('headTable', `'session' runs in float32; ${precision} graphs take the table as an input.`);
    const externalData = [{ path: TABLE_HEAD_IO.embeddingData, data: bytesOf(weights.embedding) }, ...(weights.lmHead ? [{ path: TABLE_HEAD_IO.headData, data: bytesOf(weights.lmHead) }] : [])];
    // No prepacking: a packed copy of the table would sit beside the one the lookup reads.
    const extra = { ...(options.extra as Record<string, unknown> | undefined), 'session.disable_prepacking': '1' };
    const runner = await open(buildHeadTableGraph(weights.shape, !weights.lmHead), { ...options, extra, externalData });
    detach(weights.embedding);
    if (weights.lmHead) detach(weights.lmHead);
    return new HeadRuns(runtime, weights, precision, { table, runner }, { [LAYER_IO.finalNorm]: finalNorm }, rows);
  }

  /** The chunks of scored rows a batch's head runs take, as [start, end). */
  chunks(batch: Batch): Array<[number, number]> {
    const chunks: Array<[number, number]> = [];
    for (let start = 0; start < batch.scored; start += this.rows) chunks.push([start, Math.min(batch.scored, start + this.rows)]);
    return chunks;
  }

  /** The embedding rows of `ids` ([tokens, H]). */
  async embed(ids: readonly number[]): Promise<GraphTensor> {
    const H = this.weights.shape.hiddenSize;
    if (this.sessions.table === 'session') {
      const out = await runOn(this.sessions.runner, { ...this.unread(), [TABLE_HEAD_IO.run]: this.run('embed'), [TABLE_HEAD_IO.ids]: this.int64s(ids) });
      return out[TABLE_HEAD_IO.matrix];
    }
    const x = this.precision === 'float64' ? new Float64Array(ids.length * H) : new Float32Array(ids.length * H);
    ids.forEach((id, i) => x.set(this.weights.embedding.subarray(id * H, (id + 1) * H), i * H));
    return floatTensor(this.runtime, this.precision, x, [ids.length, H]);
  }

  /** The head on scored rows `start` to `end` of `last` (the last hidden state); `gradient`: with d log p / d hidden. */
  async forward(batch: Batch, last: GraphTensor, start: number, end: number, invT: number, gradient: boolean): Promise<HeadChunk> {
    const rows = this.rowsOf(batch, last, start, end, invT);
    if (this.sessions.table === 'input') {
      const out = await runOn(gradient ? this.sessions.gradient : this.sessions.forward, rows);
      return chunkOf(out, GRAPH_IO.logps, GRAPH_IO.entropies, gradient ? LAYER_IO.logpGradient : undefined);
    }
    const out = await runOn(this.sessions.runner, { ...this.unread(), ...rows, [TABLE_HEAD_IO.run]: this.run(gradient ? 'gradient' : 'forward') });
    return chunkOf(out, TABLE_HEAD_IO.logps, TABLE_HEAD_IO.entropies, gradient ? TABLE_HEAD_IO.matrix : undefined);
  }

  /** d loss / d hidden of scored rows `start` to `end` ([rows, H]) from their d loss / d logp and d loss / d entropy. */
  async backward(batch: Batch, last: GraphTensor, start: number, end: number, invT: number, dlogps: Float64Array, dentropies: Float64Array): Promise<ArrayLike<number>> {
    const feeds = { ...this.rowsOf(batch, last, start, end, invT), [GRAPH_IO.dlogps]: this.floats(dlogps, [end - start]), [GRAPH_IO.dentropies]: this.floats(dentropies, [end - start]) };
    if (this.sessions.table === 'input') return (await runOn(this.sessions.backward, feeds))[LAYER_IO.dHidden].data as ArrayLike<number>;
    const out = await runOn(this.sessions.runner, { ...this.unread(), ...feeds, [TABLE_HEAD_IO.run]: this.run('backward') });
    return out[TABLE_HEAD_IO.matrix].data as ArrayLike<number>;
  }

  /** The scored rows of the last hidden state from `start` to `end`, their targets, 1 / T and the fixed inputs. */
  private rowsOf(batch: Batch, last: GraphTensor, start: number, end: number, invT: number): Record<string, GraphTensor> {
    const H = this.weights.shape.hiddenSize;
    const source = last.data as Float32Array | Float64Array;
    const hidden = this.precision === 'float64' ? new Float64Array((end - start) * H) : new Float32Array((end - start) * H);
    for (let k = start; k < end; k++) hidden.set(source.subarray(batch.scoreRows[k] * H, (batch.scoreRows[k] + 1) * H), (k - start) * H);
    return {
      ...this.fixed,
      [LAYER_IO.hidden]: this.floats(hidden, [end - start, H]),
      [GRAPH_IO.targets]: this.int64s(batch.targets.slice(start, end)),
      [GRAPH_IO.invTemperature]: this.floats([invT], []),
    };
  }

  /** One row for each input of the one-session head: what a run whose branch does not read them is fed. */
  private unread(): Record<string, GraphTensor> {
    const H = this.weights.shape.hiddenSize;
    return {
      ...this.fixed,
      [GRAPH_IO.invTemperature]: this.floats([1], []),
      [TABLE_HEAD_IO.ids]: this.int64s([0]),
      [LAYER_IO.hidden]: this.floats(new Float32Array(H), [1, H]),
      [GRAPH_IO.targets]: this.int64s([0]),
      [GRAPH_IO.dlogps]: this.floats([0], [1]),
      [GRAPH_IO.dentropies]: this.floats([0], [1]),
    };
  }

  private run(which: keyof typeof HEAD_TABLE_RUN): GraphTensor {
    return new this.runtime.Tensor('int64', BigInt64Array.of(BigInt(HEAD_TABLE_RUN[which])), []);
  }

  private floats(values: ArrayLike<number>, dims: number[]): GraphTensor {
    return floatTensor(this.runtime, this.precision, values, dims);
  }

  private int64s(values: readonly number[]): GraphTensor {
    return new this.runtime.Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);
  }
}

/**
 * The head's sessions run without onnxruntime's memory arena unless the caller says otherwise. A
 * head run's temporaries are a chunk's logits and their softmax and gradient (tens of MB each,
 * freed as the run ends); an arena keeps the largest run's worth per session for good, beside
 * every other session's, while without one they go back to the allocator for the layers' runs
 * to reuse. Measured in Node (BENCHMARKS.md, scale): the engine's peak 150-170 MB lower at
 * SmolLM2-135M's and Qwen2.5-0.5B's shapes, a step's CPU time within the noise at the first and
 * about 8% more at the second (its 151,936-token head runs more, larger chunks afresh); in a tab
 * the freed memory stays in the WebAssembly heap for the next run. The layers' sessions keep
 * theirs: every session without one made a step a third slower.
 */
export function headSessionOptions(sessionOptions: Record<string, unknown>): Record<string, unknown> {
  return { enableCpuMemArena: false, ...sessionOptions };
}

function chunkOf(out: Record<string, GraphTensor>, logps: string, entropies: string, logpGradient: string | undefined): HeadChunk {
  return {
    logps: out[logps].data as ArrayLike<number>,
    entropies: out[entropies].data as ArrayLike<number>,
    ...(logpGradient ? { logpGradient: out[logpGradient].data as Float32Array | Float64Array } : {}),
  };
}

function bytesOf(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}
