/**
 * Full-depth LoRA GRPO as a method of the driver (lib/run/driver.ts). Per step: the driver samples
 * a group per item from the policy, which runs the adapted model's weights; rewards it and
 * computes the step's advantages; this method runs `numIterations` updates of `GrpoTrainer` over
 * the LoRA engine (onnxruntime's graphs) on the step's groups with exactly those advantages, hands
 * the updated A and B to the policy as graph inputs (so the next step samples from the updated
 * model), and the step is committed with the adapter and AdamW's state in one store transaction.
 *
 * A drive always starts by putting the run's own adapter into the policy (a fresh one, B = 0, or
 * the last committed step's), so a resumed run samples from exactly the model an uninterrupted one
 * would have, and ends where it would have.
 */
import { InvalidInputError, StoreCorruptError } from '../../errors.js';
import { isLoraCheckpoint } from '../../grad/format.js';
import type { LoraAdapter } from '../../lora/adapter.js';
import { readLoraAdapterFile, readLoraCheckpoint, writeLoraAdapterFile, writeLoraCheckpoint, type LoraAdapterFile } from '../../lora/format.js';
import type { LoraOptimizerState } from '../../lora/optimizer.js';
import { moduleDims, type DecoderWeights } from '../../lora/weights.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
import { MemoryStore } from '../../store/memory.js';
import type { LoraRunConfig } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { LORA_RECORD } from '../../store/validate.js';
import { validateDataset } from '../../core/dataset.js';
import type { LoraAdapterEngine } from '../../train/lora-engine.js';
import type { GrpoTrainer } from '../../train/trainer.js';
import { gradientEpochStats, runTrainer, trainOnStep } from '../grpo-update.js';
import type { LoraEvent } from './events.js';
import { checkFollows, resolveLoraRunConfig, validateLoraHandles, type LoraGrpoOptions, type LoraHandles, type LoraPolicy } from './options.js';

export interface LoraResult {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The adapter as it stands at the end, as a LoRA adapter file (`exportPeftAdapter(trainer.adapter, ...)` writes PEFT's folder). */
  adapter: LoraAdapterFile;
  /**
   * The trainer; its engine holds the adapter and the frozen weights (and, on WebGPU, their
   * device buffers: `trainer.dispose()` frees them); the policy keeps sampling from the adapted model.
   */
  trainer: GrpoTrainer<LoraAdapterEngine>;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type LoraRun = Run<LoraEvent, LoraResult>;

interface LoraState {
  config: LoraRunConfig;
  handles: LoraHandles;
  trainer: GrpoTrainer<LoraAdapterEngine>;
}

/** Opens a LoRA run's trainer: a new run's from `initial` (or fresh), a resumed run's from its checkpoint. */
function loraMethod(initial?: LoraAdapter): Method<'lora', LoraState, LoraHandles, LoraResult> {
  return {
    kind: 'lora',
    resumeWith: 'resumeLoraGrpo (webgrpo/grad)',
    record: LORA_RECORD,
    start: (options) => loraGrpo(options as unknown as LoraGrpoOptions),
    resume: (runId, handles) => resumeLoraGrpo(runId, handles),
    validateHandles: validateLoraHandles,
    advantages: (config) => ({ scaleRewards: config.loss.scaleRewards }),

    async open({ run, store, handles, last }) {
      const { config } = run;
      const checkpoint = last ? await store.getAdapter(run.id) : undefined;
      let resumed: { adapter: LoraAdapter; state: LoraOptimizerState } | undefined;
      if (checkpoint) {
        if (!isLoraCheckpoint(checkpoint)) throw new StoreCorruptError(`run "${run.id}"`, `Run "${run.id}" is a lora run but its checkpoint is a head adapter's.`);
        resumed = readLoraCheckpoint(checkpoint);
      }
      if (!resumed && !initial && config.lora.initial) {
        throw new InvalidInputError('runId', `run "${run.id}" started from a given adapter and stopped before its first step was committed, so no store holds that adapter; start it again with loraGrpo({ initialAdapter }).`);
      }
      const adapter = resumed?.adapter ?? (initial ? structuredClone(initial) : undefined);
      const { loraModel, loraEngine, graphEngine } = await loraModules();
      // Every run trains on onnxruntime's graphs, runs stored by the removed 'cpu' and 'webgpu'
      // engines too (their A, B and AdamW moments are the same tensors); the decoder is found by its structure.
      checkFollows(handles.policy);
      const model = await loraModel(handles.policy, adapter ?? { ...config.lora });
      checkTrainable(model.weights, model.adapter);
      const graph = await graphEngine(model.weights, model.adapter, handles.policy.info.backend);
      let trainer: GrpoTrainer<LoraAdapterEngine>;
      try {
        trainer = runTrainer(loraEngine(model, { ...(resumed ? { state: resumed.state } : {}), graph }), config, last);
      } catch (error) {
        void graph.release();
        throw error;
      }
      try {
        // The policy samples under the run's adapter (as graph inputs) from the first item on, so a
        // fresh run and a resumed one sample with the same graph.
        await followAdapter(handles.policy, trainer.engine.adapter);
      } catch (error) {
        // The drive has no state to dispose yet: free the engine's graph sessions here.
        trainer.dispose();
        throw error;
      }
      return { config, handles, trainer };
    },

    // Updates on the step's groups with the driver's advantages (the old log-probs are the rollouts'
    // own), then the sampler follows the updated adapter.
    async finishStep({ config, handles, trainer }, ctx, items, advantages) {
      const training = await trainOnStep(trainer, config, ctx, items, advantages);
      const started = performance.now();
      const { engine } = trainer;
      await followAdapter(handles.policy, engine.adapter);
      const refreshMs = performance.now() - started;
      const adapter = writeLoraCheckpoint(engine.adapter, engine.optimizerState, ctx.plan.step, handles.policy.info.model);
      return { payload: { kind: 'lora', training, refreshMs }, extras: { adapter }, end: { training, refreshMs } };
    },
    epochEnd: (_state, epoch, steps) => ({ stats: gradientEpochStats(epoch, steps) }),
    result: async ({ trainer, handles }, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
      runId,
      status,
      epochsCompleted,
      stepsCompleted,
      itemsProcessed,
      adapter: writeLoraAdapterFile(trainer.engine.adapter, { model: handles.policy.info.model, updates: trainer.engine.updates }),
      trainer,
    }),
    interrupted: ({ trainer }) => trainer.releaseStates(),
    dispose: ({ trainer }) => trainer.dispose(),
  };
}

/**
 * The training engine, loaded when a LoRA run opens: the method registry (and so the package's
 * main entry, and a page that only shows stored runs) holds these hooks without the engine's code.
 */
async function loraModules() {
  const [{ loraModel, loraEngine }, { LoraGraphEngine }, { policyGraphRuntime, graphSessionOptions }] = await Promise.all([
    import('../../train/lora-engine.js'),
    import('../../train/graph/lora-graph-engine.js'),
    import('../../train/graph/policy-runtime.js'),
  ]);
  /** The training graphs of the model's weights, in the policy's onnxruntime on its backend. */
  const graphEngine = async (weights: DecoderWeights, adapter: LoraAdapter, backend: string) =>
    LoraGraphEngine.create(await policyGraphRuntime(), weights, { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules }, { sessionOptions: graphSessionOptions(backend) });
  return { loraModel, loraEngine, graphEngine };
}

/** The sampler takes the adapter's A and B as graph inputs (checked at the run's start: the policy has followAdapter). */
function followAdapter(policy: LoraPolicy, adapter: LoraAdapter): Promise<void> {
  checkFollows(policy);
  return policy.followAdapter(adapter);
}

/** The LoRA method as the registry holds it (runs resume from their checkpoint). */
export const loraMethodHooks = loraMethod();

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function loraGrpo(options: LoraGrpoOptions): LoraRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveLoraRunConfig(options);
  const dataset = validateDataset(options.dataset);
  const initial = options.initialAdapter !== undefined ? initialAdapter(options.initialAdapter, config) : undefined;
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const run = newRunRecord('lora', runId, config, dataset.length);
  return startRun(initial ? loraMethod(initial) : loraMethodHooks, run, dataset, options, options.store ?? new MemoryStore());
}

/**
 * Continues a stored LoRA run from its first unfinished item, with the adapter and optimizer state
 * of its last committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeLoraGrpo(runId: string, options: LoraHandles & { store: Store }): LoraRun {
  return resumeRun(loraMethodHooks, runId, options);
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
