/**
 * Full-depth LoRA (an adapter on every attention and MLP projection of every layer) as a training
 * engine: the forward and exact backward of the whole decoder with the adapter as onnxruntime
 * graphs (lib/train/graph: LoraGraphs, on whichever onnxruntime and backend the policy runs:
 * Node CPU, WASM or WebGPU), and AdamW over every A and B in TypeScript. The reference is the same
 * graphs with B = 0, run once per batch.
 *
 *   const trainer = new GrpoTrainer(loraEngine(await loraModel(policy, { r: 8 })), { lr: 1e-3 }, { numGenerations: 8 });
 */
import { InvalidInputError, throwIfAborted, UnsupportedError } from '../errors.js';
import { adamwTensors, globalNorm, type ResolvedOptimizer } from './optimizer.js';
import { createLoraAdapter, loraTensors, zerosLike, type LoraAdapter, type LoraOptions } from '../lora/adapter.js';
import { readDecoderWeights } from '../weights/read-onnx.js';
import { findDecoder } from '../policy/onnx/structure/find-decoder.js';
import { loraOptimizerState, type LoraOptimizerState } from '../lora/optimizer.js';
import type { DecoderWeights } from '../weights/decoder.js';
import type { PromptInput } from '../core/policy.js';
import type { TrainablePolicy } from './trainable-policy.js';
import type { EngineBatch, EngineStats, ForwardBackwardResult, ForwardOptions, PartSensitivities, TrainingEngine } from './engine.js';
import { LoraGraphs, type GraphGroup, type LoraGraphPass } from './graph/lora-graph-engine.js';
import { policyGraphRuntime } from './graph/policy-runtime.js';
import type { GraphRuntime } from './graph/runtime.js';
import { planMemory } from './memory.js';

/** The model a LoRA engine trains: the frozen decoder, the adapter on it, and how prompts become tokens. */
export interface LoraModel<Prompt = PromptInput> {
  weights: DecoderWeights;
  adapter: LoraAdapter;
  /** The prompt's token ids as the sampling policy sees them (`policy.promptIds`; the identity for prompts given as ids). */
  promptIds(input: Prompt): readonly number[];
  /**
   * Reads the frozen weights again, as they were read (loraModel: from the policy's model files),
   * so an engine may release its weights between steps (`releaseWeights`, a run's `takeTurns`);
   * absent: the engine keeps them for its life. With it, the engine calls `promptIds` and `reload`
   * as plain functions (not as the model's methods), so it keeps nothing that holds the weights.
   */
  reload?(): Promise<DecoderWeights>;
}

/**
 * How the decoder's weights are found in the export: by the graph's structure, whatever the names
 * (lib/policy/onnx/structure: Optimum and onnxruntime-genai exports included; default), or by the
 * exporter's module names (what `mergeLoraIntoOnnx` needs to write the merged weights back).
 */
export type DecoderReader = 'names' | 'structure';

/**
 * The policy's base model read for training, with a new adapter (`options`) or the given one. The
 * model's file bytes are not kept: the weights are read out of them, and an engine that held them
 * too would keep a second copy of every weight for its whole life. Read by structure, an fp16
 * export's projections stay at 16 bits (HalfMatrix; the training graphs widen each layer's as it
 * runs, the same numbers as widening them here) and 4-bit ones packed.
 */
export async function loraModel(policy: Pick<TrainablePolicy, 'modelGraph' | 'promptIds'>, options: LoraOptions | LoraAdapter = {}, reader: DecoderReader = 'structure'): Promise<LoraModel> {
  const read = async (): Promise<DecoderWeights> => {
    const { graph, externalData, config } = await policy.modelGraph();
    return reader === 'structure' ? findDecoder(graph, { config, externalData, keepHalf: true }) : readDecoderWeights(graph, { config, externalData });
  };
  const weights = await read();
  const adapter = 'layers' in options ? options : createLoraAdapter(weights.shape, options);
  if (adapter.layers.length !== weights.shape.numLayers) throw new InvalidInputError('adapter', `has ${adapter.layers.length} layers; the model has ${weights.shape.numLayers}.`);
  return { weights, adapter, promptIds: (input) => policy.promptIds(input), reload: read };
}

export interface LoraEngineOptions {
  /** The optimizer's state to continue from (a checkpoint's). */
  state?: LoraOptimizerState;
  /**
   * The training graphs of the model's weights (buildLoraGraphs(model, options), what the LoRA run builds);
   * without it, the engine builds them as it is made, in the policy's onnxruntime (`runtime`, with
   * `sessionOptions`: its execution provider in a page); a failed build is the first forward's
   * error. `dispose()` releases them.
   */
  graph?: LoraGraphs;
  runtime?: () => Promise<GraphRuntime>;
  sessionOptions?: Record<string, unknown>;
  /** Bytes a step's activations may take, for the graphs built here (planMemory); a given `graph` has its own. */
  memoryBudget?: number;
}

/** The adapter on `model`, updated in place. */
export function loraEngine<Prompt = PromptInput>(model: LoraModel<Prompt>, options: LoraEngineOptions = {}): LoraTrainingEngine<Prompt> {
  return new LoraTrainingEngine(model, options);
}

/**
 * The training graphs of `model`'s weights for its adapter's rank, scale and modules, in the
 * policy's onnxruntime (or `runtime`) with `sessionOptions`, sized for `memoryBudget` (or a run's `memory` plan).
 */
export async function buildLoraGraphs(
  model: Pick<LoraModel<unknown>, 'weights' | 'adapter'>,
  options: Pick<LoraEngineOptions, 'runtime' | 'sessionOptions' | 'memoryBudget'> & { memory?: { activationBudget: number; microBatchTokens: number } } = {},
): Promise<LoraGraphs> {
  const { config, scale } = model.adapter;
  // A run's plan (memory-plan.ts) gives the engine its settings itself; a bare memoryBudget is the activations'.
  const memory = options.memory ?? (options.memoryBudget !== undefined ? planMemory(model.weights.shape, options.memoryBudget) : {});
  const runtime = await (options.runtime ?? policyGraphRuntime)();
  return LoraGraphs.create(runtime, model.weights, { r: config.r, scale, targetModules: config.targetModules }, { sessionOptions: options.sessionOptions, ...memory });
}

/** The batch a LoRA engine keeps: its prompts' token ids and, once asked for, its reference log-probs. */
interface KeptBatch<Prompt> {
  groups: EngineBatch<Prompt>;
  promptIds: ReadonlyArray<readonly number[]>;
  refLogps?: Float64Array;
}

/** What a LoRA engine's `read` returns and `load` takes. */
export interface LoraEngineState {
  adapter: LoraAdapter;
  optimizer: LoraOptimizerState;
}

export class LoraTrainingEngine<Prompt = PromptInput> implements TrainingEngine<Prompt, LoraEngineState> {
  readonly backend = 'onnxruntime';
  readonly #adapter: LoraAdapter;
  readonly #promptIdsOf: LoraModel<Prompt>['promptIds'];
  readonly #reload: LoraModel<Prompt>['reload'];
  /** The frozen weights and their graphs; both absent after releaseWeights until the next forward reads them again. */
  #weights: DecoderWeights | undefined;
  #graph: Promise<LoraGraphs> | undefined;
  /** Makes the graphs again for weights read again (the first graphs' settings, none of their weights). */
  #rebuild: ((weights: DecoderWeights) => Promise<LoraGraphs>) | undefined;
  #optimizer: LoraOptimizerState;
  /** The batch whose prompt ids and reference log-probs are kept (they do not change with the adapter). */
  #batch?: KeptBatch<Prompt>;
  #pass?: LoraGraphPass;
  #grad?: LoraAdapter;

  constructor(model: LoraModel<Prompt>, options: LoraEngineOptions = {}) {
    if (!model || !model.weights || !model.adapter || typeof model.promptIds !== 'function') {
      throw new InvalidInputError('model', 'expected { weights, adapter, promptIds } (see loraModel).');
    }
    if (options.graph && options.graph.weights !== model.weights) throw new InvalidInputError('graph', "was built from other weights than the model's; build it from model.weights.");
    // The model's parts, not the model: releaseWeights must leave nothing here holding its weights.
    this.#adapter = model.adapter;
    // With reload, promptIds and reload are kept as plain functions: bound to the model, they would keep its weights.
    this.#promptIdsOf = model.reload ? model.promptIds : model.promptIds.bind(model);
    this.#reload = model.reload;
    this.#weights = model.weights;
    this.#optimizer = loraOptimizerState(model.adapter, options.state);
    const graph = options.graph ? Promise.resolve(options.graph) : buildLoraGraphs(model, options);
    // A failed build is reported by the forward that awaits it, not as an unhandled rejection here.
    graph.catch(() => undefined);
    this.#graph = graph;
  }

  get updates(): number {
    return this.#optimizer.step;
  }

  /** The adapter being trained (live: updated in place by every step). */
  get adapter(): LoraAdapter {
    return this.#adapter;
  }

  /** The frozen weights; undefined while released (releaseWeights) until the next forward reads them again. */
  get weights(): DecoderWeights | undefined {
    return this.#weights;
  }

  /**
   * Frees the frozen weights and the graphs' sessions (their arenas) until the next forward,
   * which reads the weights again (the model's `reload`: loraModel reads the policy's files) and
   * builds the same graphs: the same numbers bit for bit. A LoRA run's `takeTurns` calls it after
   * each step, so the sampler's session and the engine's weights are never in memory together.
   * The adapter, the optimizer's state and the kept reference log-probs stay.
   */
  async releaseWeights(): Promise<void> {
    if (!this.#reload) throw new UnsupportedError("This engine's model cannot read its weights again (its model has no reload; loraModel's has).");
    const graph = this.#graph;
    if (!graph) return;
    const built = await graph.catch(() => undefined);
    // A failed build stays, for the next forward to report; a release that raced this one did the work.
    if (!built || this.#graph !== graph) return;
    this.#pass = undefined;
    this.#grad = undefined;
    this.#graph = undefined;
    this.#weights = undefined;
    this.#rebuild ??= built.rebuilder();
    await built.release();
  }

  /** The graphs of the frozen weights, read again and built again after releaseWeights. */
  #graphs(): Promise<LoraGraphs> {
    if (!this.#graph) {
      const reload = this.#reload!;
      const rebuild = this.#rebuild!;
      const graph = (async () => {
        const weights = await reload();
        this.#weights = weights;
        return rebuild(weights);
      })();
      graph.catch(() => undefined);
      this.#graph = graph;
    }
    return this.#graph;
  }

  /** AdamW's live state (what a checkpoint stores with the adapter). */
  get optimizerState(): LoraOptimizerState {
    return this.#optimizer;
  }

  async forward(groups: EngineBatch<Prompt>, options: ForwardOptions): Promise<EngineStats> {
    this.#pass = undefined;
    const { graph, graphGroups, batch } = await this.#open(groups, options);
    const pass = await graph.forward(this.#adapter, graphGroups, options.temperature, { entropyGradient: options.entropyGradient ?? true });
    this.#pass = pass;
    return { logps: flat(pass.logprobs), entropies: flat(pass.entropies), ...(options.reference ? { refLogps: batch.refLogps } : {}) };
  }

  /**
   * The forward and the backward part by part (LoraGraphs.forwardBackward): a part's activations
   * are kept through its own backward when they fit the graphs' activationBudget (a micro-batch
   * whose do not runs in shares of its rows that do), so the layers' forward is not recomputed. The reference log-probs, when
   * asked for, come first (they do not change with the adapter) and are in every part's numbers.
   */
  async forwardBackward(groups: EngineBatch<Prompt>, options: ForwardOptions, sensitivities: PartSensitivities): Promise<ForwardBackwardResult> {
    this.#pass = undefined;
    this.#grad = undefined;
    const { graph, graphGroups, batch } = await this.#open(groups, options);
    const step = await graph.forwardBackward(
      this.#adapter,
      graphGroups,
      options.temperature,
      (part, start, end) => {
        throwIfAborted(options.signal);
        return sensitivities({ ...part, ...(options.reference ? { refLogps: batch.refLogps!.subarray(start, end) } : {}) }, start, end);
      },
      { entropyGradient: options.entropyGradient ?? true },
    );
    this.#grad = step.gradient;
    return {
      stats: { logps: flat(step.logprobs), entropies: flat(step.entropies), ...(options.reference ? { refLogps: batch.refLogps } : {}) },
      gradNorm: globalNorm(loraTensors(step.gradient)),
    };
  }

  /** The graphs, the batch's groups as they take them, and its reference log-probs once asked for. */
  async #open(groups: EngineBatch<Prompt>, options: ForwardOptions): Promise<{ graph: LoraGraphs; graphGroups: GraphGroup[]; batch: KeptBatch<Prompt> }> {
    if (this.#batch?.groups !== groups) this.#batch = { groups, promptIds: groups.map((g, i) => this.#promptIds(g.prompt, i)) };
    const batch = this.#batch;
    const graph = await this.#graphs();
    const graphGroups: GraphGroup[] = batch.groups.map(({ completions }, g) => ({ promptIds: batch.promptIds[g], completions }));
    if (options.reference && !batch.refLogps) batch.refLogps = flat((await graph.forward(zerosLike(this.#adapter), graphGroups, options.temperature, { backward: false })).logprobs);
    return { graph, graphGroups, batch };
  }

  async backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number> {
    const pass = this.#pass;
    if (!pass) throw new InvalidInputError('backward', 'needs a forward first.');
    this.#pass = undefined;
    const rows = (values: Float64Array) => {
      let slot = 0;
      return pass.logprobs.map((row) => values.subarray(slot, (slot += row.length)));
    };
    const grad = await pass.backward(rows(dLogp), rows(dEntropy));
    this.#grad = grad;
    return globalNorm(loraTensors(grad));
  }

  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    const grad = this.#grad;
    if (!grad) throw new InvalidInputError('step', 'needs a backward first.');
    this.#grad = undefined;
    const state = this.#optimizer;
    adamwTensors(loraTensors(this.#adapter), loraTensors(grad), loraTensors(state.m), loraTensors(state.v), ++state.step, clip, optimizer);
  }

  release(): void {
    this.#pass = undefined;
    this.#batch = undefined;
    this.#grad = undefined;
  }

  async read(): Promise<LoraEngineState> {
    return structuredClone({ adapter: this.#adapter, optimizer: this.#optimizer });
  }

  load(state: LoraEngineState): void {
    const target = loraTensors(this.#adapter);
    const source = state?.adapter ? loraTensors(state.adapter) : [];
    if (source.length !== target.length || source.some((t, k) => t.length !== target[k].length)) throw new InvalidInputError('state.adapter', "does not have the adapter's layout.");
    const optimizer = loraOptimizerState(this.#adapter, structuredClone(state.optimizer));
    source.forEach((t, k) => target[k].set(t));
    this.#optimizer = optimizer;
  }

  /** Releases the graph sessions; the adapter and the optimizer's state stay readable. */
  dispose(): void {
    this.release();
    void this.#graph?.then((graph) => graph.release()).catch(() => undefined);
  }

  #promptIds(prompt: Prompt, group: number): readonly number[] {
    const ids = this.#promptIdsOf(prompt);
    if (ids.length === 0) throw new InvalidInputError(`prompts[${group}]`, 'encodes to no tokens; the decoder needs at least one to predict the first completion token from.');
    return ids;
  }
}

/** Per-completion rows laid end to end in the batch's flat slot order. */
function flat(rows: ReadonlyArray<readonly number[]>): Float64Array {
  const out = new Float64Array(rows.reduce((n, row) => n + row.length, 0));
  let slot = 0;
  for (const row of rows) {
    out.set(row, slot);
    slot += row.length;
  }
  return out;
}
