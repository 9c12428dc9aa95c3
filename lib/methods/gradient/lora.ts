/**
 * Full-depth LoRA as the gradient method's adapter (`adapter: 'lora'`): PEFT's LoRA settings on
 * the attention and MLP projections of every layer, a smaller default learning rate, where the
 * forward and backward run (`engine`: onnxruntime's training graphs), and the policy that
 * follows the adapter: after every update the adapter's A and B are handed to it as graph inputs,
 * so the next step samples from the updated model. Runs are stored as kind 'lora'.
 *
 * A drive always starts by putting the run's own adapter into the policy (a fresh one, B = 0, or
 * the last committed step's), so a resumed run samples from exactly the model an uninterrupted one
 * would have, and ends where it would have.
 */
import { InvalidInputError, StoreCorruptError } from '../../errors.js';
import { resolveLoraConfig, type LoraAdapter, type LoraOptions } from '../../lora/adapter.js';
import { readLoraAdapterFile, readLoraCheckpoint, writeLoraAdapterFile, writeLoraCheckpoint, type LoraAdapterFile } from '../../lora/format.js';
import type { LoraOptimizerState } from '../../lora/optimizer.js';
import { LORA_MODULES, moduleDims, type DecoderWeights, type LoraModule } from '../../weights/decoder.js';
import type { LoraTrainingEngine } from '../../train/lora-engine.js';
// Static: the head adapter's engine imports it statically too, so a dynamic import here moves
// nothing out of any chunk (its onnxruntime import is itself dynamic, inside the function).
import { graphSessionOptions } from '../../train/graph/policy-runtime.js';
import { isLoraCheckpoint, type OpenAdapter } from './adapter.js';
import type { TrainablePolicy } from '../../train/trainable-policy.js';
import type { LoraRunConfig, LoraRunRecord, LoraStepPayload } from './record.js';
import type { NewRun, OpenContext } from '../../run/method.js';
import type { Store } from '../../store/store.js';
import { runTrainer } from './update.js';
import { promptOf } from '../../run/rollout.js';
import { planRunMemory, type MemoryPlan } from '../../train/memory-plan.js';
import { canCollectGarbage, collectGarbage } from '../../policy/onnx/collect-garbage.js';
import { isNodeRuntime } from '../../policy/onnx/runtime.js';
import { NODE_RUNTIME_BYTES } from '../../train/memory.js';
import { validateHandles, type LoopHandles } from '../../run/options.js';
import { grpoConfigOf, resolveTrainingConfig, type TrainingRunOptions } from './training-options.js';
import { perCompletionGradient } from '../../math/loss-config.js';

export type LoraHandles = LoopHandles<TrainablePolicy>;

export interface LoraGrpoOptions extends LoraHandles, TrainingRunOptions {
  /** The adapter the run trains: 'lora' here (`gradientGrpo` needs it; `loraGrpo` implies it). */
  adapter?: 'lora';
  /** Rank (default 8), alpha (default 16), target modules (default all seven), rsLoRA. */
  lora?: Omit<LoraOptions, 'seed'>;
  /**
   * Where the forward and backward run: 'onnxruntime' (also what 'auto', the default, means): the
   * training graphs in the policy's own onnxruntime, on its backend, and the sampler follows the
   * adapter as graph inputs (`followAdapter`: no merge, no new session). Stored with the run; runs
   * stored by the removed 'cpu' and 'webgpu' engines resume on it (their A, B and AdamW moments are
   * the same tensors).
   */
  engine?: 'onnxruntime' | 'auto';
  /** Start from a trained adapter (a LoRA adapter file or its JSON text, or `importPeftAdapter`'s adapter) instead of a fresh one. */
  initialAdapter?: LoraAdapter | LoraAdapterFile | string;
  /**
   * Bytes the run may take in all: the engine's weights and step and the sampler's session beside
   * them (estimateStepMemory's `together`), or the larger of the two when they take turns
   * (`inTurns`). Before the first step, with the model's shape, the longest prompt of the dataset
   * and `maxNewTokens` replies, the run takes the largest micro-batches that fit (the backward
   * recomputing; what the budget leaves over, up to 512 MiB, keeps activations instead), chooses
   * together or in turns (`takeTurns`, 'auto' by default here), and refuses with an
   * OutOfMemoryError that says what would fit when nothing does; the `run-start` event's `memory`
   * says which and why. In Node the budget is the process's resident memory: the runtime's own
   * (NODE_RUNTIME_BYTES) counts too, and taking turns where only that fits, JavaScript's garbage
   * is collected at each turn (`memory.collectGarbage`). Default: none (activations kept up to
   * 512 MiB, micro-batches of 768 tokens, together). Stored with the run.
   */
  memoryBudget?: number;
  /**
   * The sampler and the training engine hold the model's weights in turns, never together: once a
   * step's groups are sampled the policy's session is released (`releaseSession`), the engine reads
   * the weights again from the model's files and trains, then releases its weights and sessions
   * (`releaseWeights`) and the next request builds the sampler's session again. The same run to
   * the bit (the same graphs on the same weights), for a session build and a read of the weights
   * per step: at SmolLM2-135M's shape in fp32, 8 x 128, peak RSS 2212 -> 1536 MB (1367 MB
   * collecting garbage at each turn) for 8-15% more CPU an iteration (BENCHMARKS, scale). 'auto'
   * takes turns when `memoryBudget` holds the run in turns but not together (estimateStepMemory's
   * `inTurns` and `together`), and holds both together without a budget or for a policy that
   * cannot release its session. Default: 'auto' with a `memoryBudget`, else false. Stored with
   * the run.
   */
  takeTurns?: boolean | 'auto';
}

/** `loraGrpo`'s own default, its AdamW learning rate of 2e-3; its other defaults are `GRADIENT_DEFAULTS`. */
export const LORA_GRPO_DEFAULTS = { lr: 2e-3 } as const;

export function validateLoraHandles(handles: LoraHandles): void {
  validateHandles(handles);
  const { policy } = handles;
  for (const name of ['modelGraph', 'replaceGraph', 'promptIds'] as const) {
    if (typeof policy[name] !== 'function') {
      throw new InvalidInputError('policy', `has no ${name}(); a LoRA run trains an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx).`);
    }
  }
}

export function resolveLoraRunConfig(options: LoraGrpoOptions): LoraRunConfig {
  validateLoraHandles(options);
  const config = resolveTrainingConfig(options, LORA_GRPO_DEFAULTS.lr);
  const lora = options.lora ?? {};
  if (lora === null || typeof lora !== 'object') throw new InvalidInputError('lora', 'must be an object { r?, alpha?, targetModules?, useRslora? }.');
  const { r, alpha, targetModules, useRslora } = resolveLoraConfig(lora);
  const engine = resolveLoraEngine(options.engine, options.policy);
  const { memoryBudget } = options;
  if (memoryBudget !== undefined && !(typeof memoryBudget === 'number' && memoryBudget > 0 && Number.isFinite(memoryBudget))) {
    throw new InvalidInputError('memoryBudget', `must be a number of bytes > 0, got ${String(memoryBudget)}.`);
  }
  const takeTurns = options.takeTurns ?? (memoryBudget !== undefined ? 'auto' : false);
  if (typeof takeTurns !== 'boolean' && takeTurns !== 'auto') throw new InvalidInputError('takeTurns', `must be true, false or 'auto', got ${String(takeTurns)}.`);
  if (takeTurns === true) checkReleases(options.policy);
  return {
    ...config,
    engine,
    backend: options.policy.info.backend,
    lora: { r, alpha, useRslora, targetModules: [...targetModules] as LoraModule[], seed: config.seed },
    ...(memoryBudget !== undefined ? { memoryBudget } : {}),
    ...(takeTurns !== false ? { takeTurns } : {}),
  };
}

/** The engine option resolved for a new run: onnxruntime's kernels, whose sampler follows the adapter. */
export function resolveLoraEngine(option: LoraGrpoOptions['engine'], policy: TrainablePolicy): 'onnxruntime' {
  // Options stored or written for the removed engines are strings outside the type.
  const value: string = option ?? 'auto';
  if (value === 'cpu' || value === 'webgpu') {
    throw new InvalidInputError('engine', `'${value}' was removed: LoRA trains on onnxruntime's kernels on the policy's own backend (its WASM, WebGPU or Node CPU); leave engine out or pass 'auto' or 'onnxruntime'.`);
  }
  if (value !== 'auto' && value !== 'onnxruntime') throw new InvalidInputError('engine', `must be 'auto' or 'onnxruntime', got ${String(value)}.`);
  checkFollows(policy);
  return 'onnxruntime';
}

/** The onnxruntime engine's sampler follows the adapter as graph inputs, which the policy must offer. */
export function checkFollows(policy: TrainablePolicy): asserts policy is TrainablePolicy & Required<Pick<TrainablePolicy, 'followAdapter'>> {
  if (typeof policy.followAdapter !== 'function') {
    throw new InvalidInputError('policy', "has no followAdapter(); engine 'onnxruntime' trains an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx).");
  }
}

/** A new LoRA run: its stored config, and the trained adapter it starts from, if given (whose LoRA settings become the run's). */
export function createLoraRun(options: LoraGrpoOptions): NewRun<LoraRunConfig, LoraAdapter> {
  const config = resolveLoraRunConfig(options);
  return options.initialAdapter !== undefined ? { config, initial: initialAdapter(options.initialAdapter, config) } : { config };
}

/**
 * The run's adapter on every layer (its last committed checkpoint, else the given adapter, else a
 * fresh one), its trainer on the policy's onnxruntime, and the policy sampling under it.
 */
export async function openLoraAdapter({ run, store, handles, last, initial }: OpenContext<LoraRunRecord, LoraHandles, LoraStepPayload, LoraAdapter>): Promise<OpenAdapter<LoraStepPayload, LoraTrainingEngine, LoraAdapterFile>> {
  const { config } = run;
  const resumed = last ? await storedAdapter(store, run.id) : undefined;
  if (!resumed && !initial && config.lora.initial) {
    throw new InvalidInputError('runId', `run "${run.id}" started from a given adapter and stopped before its first step was committed, so no store holds that adapter; start it again with gradientGrpo({ adapter: 'lora', initialAdapter }).`);
  }
  const adapter = resumed?.adapter ?? (initial ? structuredClone(initial) : undefined);
  const { loraModel, loraEngine, graphEngine } = await loraModules();
  // Every run trains on onnxruntime's graphs, runs stored by the removed 'cpu' and 'webgpu'
  // engines too (their A, B and AdamW moments are the same tensors); the decoder is found by its structure.
  checkFollows(handles.policy);
  const { policy } = handles;
  if (config.takeTurns === true) checkReleases(policy);
  const mayTurn = config.takeTurns === true || (config.takeTurns === 'auto' && config.memoryBudget !== undefined && typeof policy.releaseSession === 'function');
  // Taking turns (or maybe, by the plan), the sampler's session is not in memory while the engine reads its weights.
  if (mayTurn) await policy.releaseSession!();
  // The model in a function of its own: held in this one's frame, its weights would outlive the engine's release below.
  const { trainer, memory } = await (async () => {
    const model = await loraModel(policy, adapter ?? { ...config.lora });
    checkTrainable(model.weights, model.adapter);
    const memory = await memoryPlan(config, model.weights, store, run.id, policy);
    const graph = await graphEngine(model, policy.info.backend, memory);
    try {
      return { trainer: runTrainer(loraEngine(model, { ...(resumed ? { state: resumed.state } : {}), graph }), config, last), memory };
    } catch (error) {
      void graph.release();
      throw error;
    }
  })();
  const turns = memory.mode === 'turns';
  // Where the plan says the budget needs it, each turn starts once the last one's arrays are freed (collect-garbage.ts).
  const turned = async () => {
    if (memory.collectGarbage === true) await collectGarbage();
  };
  try {
    // Taking turns, the engine's weights go before the sampler's session is built again; the first step reads them again.
    if (turns) await trainer.engine.releaseWeights();
    await turned();
    // The policy samples under the run's adapter (as graph inputs) from the first item on, so a
    // fresh run and a resumed one sample with the same graph.
    await followAdapter(policy, trainer.engine.adapter);
  } catch (error) {
    // The drive has no state to dispose yet: free the engine's graph sessions here.
    trainer.dispose();
    throw error;
  }
  const { engine } = trainer;
  return {
    trainer,
    startFields: { memory },
    // Taking turns: the step's groups are sampled, so the sampler's session goes before the engine reads its weights again.
    ...(turns
      ? {
          beforeUpdate: async () => {
            await policy.releaseSession!();
            await turned();
          },
        }
      : {}),
    // The sampler follows the updated adapter (taking turns, once the engine released its weights); `refreshMs` is what that took.
    async payload(training) {
      const started = performance.now();
      if (turns) await engine.releaseWeights();
      await turned();
      await followAdapter(handles.policy, trainer.engine.adapter);
      return { kind: 'lora', training, refreshMs: performance.now() - started };
    },
    checkpoint: async (step) => writeLoraCheckpoint(engine.adapter, engine.optimizerState, step, handles.policy.info.model),
    file: async () => writeLoraAdapterFile(engine.adapter, { model: handles.policy.info.model, updates: engine.updates }),
  };
}

/** The adapter and optimizer state of the run's last committed step. */
async function storedAdapter(store: Store, runId: string): Promise<{ adapter: LoraAdapter; state: LoraOptimizerState } | undefined> {
  const checkpoint = await store.getAdapter(runId);
  if (!checkpoint) return undefined;
  if (!isLoraCheckpoint(checkpoint)) throw new StoreCorruptError(`run "${runId}"`, `Run "${runId}" is a lora run but its checkpoint is a head adapter's.`);
  return readLoraCheckpoint(checkpoint);
}

/**
 * The training engine, loaded when a LoRA run opens: the method registry (and so the package's
 * main entry, and a page that only shows stored runs) holds these hooks without the engine's code.
 */
async function loraModules() {
  const { loraModel, loraEngine, buildLoraGraphs } = await import('../../train/lora-engine.js');
  /** The training graphs of the model's weights, in the policy's onnxruntime on its backend, sized for the run's memory budget. */
  const graphEngine = (model: { weights: DecoderWeights; adapter: LoraAdapter }, backend: string, plan: MemoryPlan) =>
    buildLoraGraphs(model, { sessionOptions: graphSessionOptions(backend), ...(plan.activationBudget !== undefined && plan.microBatchTokens !== undefined ? { memory: { activationBudget: plan.activationBudget, microBatchTokens: plan.microBatchTokens } } : {}) });
  return { loraModel, loraEngine, graphEngine };
}

/**
 * How the run holds its memory: by its memoryBudget, the model's shape, its longest prompt and its
 * settings (memory-plan.ts; refused with OutOfMemoryError before any step when nothing fits), or
 * without a budget as asked (together unless takeTurns is true).
 */
async function memoryPlan(config: LoraRunConfig, weights: DecoderWeights, store: Store, runId: string, policy: TrainablePolicy): Promise<MemoryPlan> {
  const asked = config.takeTurns ?? false;
  if (config.memoryBudget === undefined) {
    return asked === true
      ? { mode: 'turns', reason: 'Taking turns (takeTurns: true), no memoryBudget given.' }
      : { mode: 'together', reason: 'The sampler and the step together, as by default: no memoryBudget given to choose by.' };
  }
  // A policy that cannot release its session holds both together whatever 'auto' would choose.
  const releases = typeof policy.releaseSession === 'function';
  const promptTokens = Math.max(1, ...(await store.getItems(runId)).map((item) => policy.promptIds(promptOf(item)).length));
  const settings = {
    prompts: config.batchSize,
    groupSize: config.groupSize,
    promptTokens,
    completionTokens: config.maxNewTokens,
    r: config.lora.r,
    targetModules: config.lora.targetModules,
    dtype: storedDtype(weights),
    tiedHead: weights.lmHead === undefined,
    // The trainer runs the step part by part for every loss whose gradient is per completion.
    partByPart: perCompletionGradient(grpoConfigOf(config).toLossConfig()),
  };
  // In Node the budget is the process's: the runtime's own bytes count, and a turn's garbage can be collected.
  const levers = isNodeRuntime() ? { collectGarbage: canCollectGarbage(), runtimeBytes: NODE_RUNTIME_BYTES } : {};
  return planRunMemory(weights.shape, settings, config.memoryBudget, asked === 'auto' && !releases ? false : asked, levers);
}

/** How the base's projections are held, as the memory estimate counts them: 4-bit blocks, 16-bit floats kept as such, or float32. */
function storedDtype(weights: DecoderWeights): 'q4' | 'fp16' | 'fp32' {
  const held = weights.layers.flatMap((layer) => LORA_MODULES.map((m) => layer[m].weight));
  if (held.some((w) => !(w instanceof Float32Array) && w.kind === 'q4')) return 'q4';
  return held.some((w) => !(w instanceof Float32Array)) ? 'fp16' : 'fp32';
}

/** Taking turns needs a policy whose session can be released and built again (an `OnnxPolicy`). */
function checkReleases(policy: TrainablePolicy): asserts policy is TrainablePolicy & Required<Pick<TrainablePolicy, 'releaseSession'>> {
  if (typeof policy.releaseSession !== 'function') {
    throw new InvalidInputError('takeTurns', "needs a policy with releaseSession(); an ONNX policy from loadOnnxPolicy({ model }) (webgrpo/onnx) has it.");
  }
}

/** The sampler takes the adapter's A and B as graph inputs (checked at the run's start: the policy has followAdapter). */
function followAdapter(policy: TrainablePolicy, adapter: LoraAdapter): Promise<void> {
  checkFollows(policy);
  return policy.followAdapter(adapter);
}

/** A trained adapter to start from; its LoRA settings become the run's. */
function initialAdapter(value: NonNullable<LoraGrpoOptions['initialAdapter']>, config: LoraRunConfig): LoraAdapter {
  const adapter = typeof value === 'object' && 'layers' in value && 'config' in value ? value : readLoraAdapterFile(value, 'initialAdapter');
  const { r, alpha, useRslora, targetModules } = adapter.config;
  if (!Array.isArray(adapter.layers) || !(r >= 1)) throw new InvalidInputError('initialAdapter', 'expected a LoRA adapter ({ config, scale, layers }) or a LoRA adapter file.');
  config.lora = { ...config.lora, r, alpha, useRslora, targetModules: [...targetModules], initial: true };
  return { config: adapter.config, scale: adapter.scale, layers: adapter.layers };
}

/** The adapter fits the model (4-bit projections included: the graphs keep them packed, and the sampler adds the adapter beside them). */
function checkTrainable(weights: DecoderWeights, adapter: LoraAdapter): void {
  adapter.layers.forEach((layer, l) => {
    for (const [module, pair] of Object.entries(layer)) {
      const want = moduleDims(weights.shape, module as keyof typeof layer);
      if (pair.inDim !== want.inDim || pair.outDim !== want.outDim) {
        throw new InvalidInputError('adapter', `layer ${l} ${module} is [${pair.inDim} -> ${pair.outDim}]; the model's is [${want.inDim} -> ${want.outDim}].`);
      }
    }
  });
}
