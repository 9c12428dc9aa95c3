/**
 * Full-depth LoRA GRPO as a method of the driver (lib/run/driver.ts). Per step: the driver samples
 * a group per item from the policy, which runs the adapted model's weights; rewards it and
 * computes the step's advantages; this method runs `numIterations` updates of `LoraGrpoTrainer`
 * on the step's groups with exactly those advantages, merges the adapter into the model's weights
 * and swaps them into the policy (so the next step samples from the updated model), and the step
 * is committed with the adapter and AdamW's state in one store transaction.
 *
 * A drive always starts by putting the run's own model into the policy (the base model, or the
 * merged adapter of the last committed step), so a resumed run samples from exactly the weights
 * an uninterrupted one would have, and ends where it would have.
 */
import { InvalidInputError, StoreCorruptError, throwIfAborted, UnsupportedError } from '../../errors.js';
import { isLoraCheckpoint } from '../../grad/format.js';
import type { TrainStepMetrics } from '../../grad/metrics.js';
import { groupRolloutBatch, rolloutSampling } from '../../grad/rollouts.js';
import type { LoraAdapter } from '../../lora/adapter.js';
import { readLoraAdapterFile, readLoraCheckpoint, writeLoraAdapterFile, writeLoraCheckpoint, type LoraAdapterFile } from '../../lora/format.js';
import type { LoraGrpoTrainer } from '../../lora/grpo-trainer.js';
import type { LoraOptimizerState } from '../../lora/optimizer.js';
import { moduleDims, type DecoderWeights } from '../../lora/weights.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
import { MemoryStore } from '../../store/memory.js';
import type { LoraRunConfig } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { LORA_RECORD, validateDataset } from '../../store/validate.js';
import { gradientEpochStats } from '../gradient/method.js';
import { grpoConfigOf } from '../gradient/options.js';
import type { LoraEvent } from './events.js';
import { hasWebgpu, NO_GPU, resolveLoraRunConfig, validateLoraHandles, type LoraGrpoOptions, type LoraHandles, type LoraPolicy } from './options.js';

export interface LoraResult {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The adapter as it stands at the end, as a LoRA adapter file (`exportPeftAdapter(trainer.adapter, ...)` writes PEFT's folder). */
  adapter: LoraAdapterFile;
  /**
   * The trainer, holding the adapter and the frozen weights (and, on WebGPU, their device
   * buffers: `trainer.dispose()` frees them); the policy keeps sampling from the adapted model.
   */
  trainer: LoraGrpoTrainer;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type LoraRun = Run<LoraEvent, LoraResult>;

interface LoraState {
  config: LoraRunConfig;
  handles: LoraHandles;
  graph: Uint8Array;
  trainer: LoraGrpoTrainer;
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
      const { loraModel, LoraGrpoTrainer, mergeLoraIntoOnnx, createWebgpuLoraModel, loraTrainingDevice } = await loraEngine();
      const model = await loraModel(handles.policy, adapter ?? { ...config.lora });
      checkTrainable(model.weights, model.adapter);
      // Runs stored before the engine option trained on the CPU.
      const engine = config.engine ?? 'cpu';
      if (engine === 'webgpu') checkWebgpuAt(run.id, handles.policy);
      const gpu = engine === 'webgpu' ? createWebgpuLoraModel(await loraTrainingDevice(handles.policy), model.weights) : undefined;
      let trainer: LoraGrpoTrainer;
      try {
        trainer = new LoraGrpoTrainer(model, config.optimizer, grpoConfigOf(config), {
          temperature: config.temperature,
          ...(config.loss.maskTruncatedCompletions !== undefined ? { maskTruncatedCompletions: config.loss.maskTruncatedCompletions } : {}),
          ...(config.loss.adaptiveEntropy ? { adaptiveEntropy: config.loss.adaptiveEntropy } : {}),
          advantages: { weights: config.rewards.map((r) => r.weight), scaleRewards: config.loss.scaleRewards },
          ...(resumed ? { state: resumed.state } : {}),
          ...(gpu ? { engine: 'webgpu' as const, gpu } : {}),
        });
      } catch (error) {
        gpu?.dispose();
        throw error;
      }
      try {
        const control = last?.payload.training.at(-1)?.adaptiveEntropy;
        if (control && config.loss.adaptiveEntropy) trainer.restoreAdaptiveEntropy(control);
        // The policy samples from the run's model from the first item on: the base one for a fresh
        // adapter (B = 0), else the adapter merged in.
        await handles.policy.replaceGraph(adapter ? await mergeLoraIntoOnnx(model.graph, model.weights, model.adapter) : model.graph);
      } catch (error) {
        // The drive has no state to dispose yet: free the trainer's WebGPU weights here.
        trainer.dispose();
        throw error;
      }
      return { config, handles, graph: model.graph, trainer };
    },

    // Updates on the step's groups with the driver's advantages (the old log-probs are the rollouts'
    // own), then the sampler follows the updated adapter.
    async finishStep({ config, handles, graph, trainer }, ctx, items, advantages) {
      const { plan, signal } = ctx;
      const training: TrainStepMetrics[] = [];
      // A step whose every group was flat (dynamic sampling left them all out) has nothing to update on.
      if (items.length > 0) {
        const groups = items.map((r) => ({ completions: r.rollouts, rewards: r.rollouts.map((x) => x.rewards) }));
        const batch = groupRolloutBatch(groups);
        const prompts = items.map((r) => r.prompt);
        const sampling = { sampling: { temperature: config.temperature, topK: config.topK, topP: config.topP, minP: config.minP }, ...rolloutSampling(groups) };
        for (let iteration = 1; iteration <= config.numIterations; iteration++) {
          throwIfAborted(signal);
          const { metrics } = await trainer.trainStep(batch, prompts, { signal, advantages, ...sampling });
          training.push(metrics);
          await ctx.emit({ type: 'train', step: plan.step, epoch: plan.epoch, iteration, iterations: config.numIterations, metrics });
        }
      }
      trainer.releaseStates();
      throwIfAborted(signal);
      const started = performance.now();
      const { mergeLoraIntoOnnx } = await loraEngine();
      await handles.policy.replaceGraph(await mergeLoraIntoOnnx(graph, trainer.weights, trainer.adapter));
      const refreshMs = performance.now() - started;
      const adapter = writeLoraCheckpoint(trainer.adapter, trainer.optimizer.state, plan.step, handles.policy.info.model);
      return { payload: { kind: 'lora', training, refreshMs }, extras: { adapter }, end: { training, refreshMs } };
    },
    epochEnd: (_state, epoch, steps) => ({ stats: gradientEpochStats(epoch, steps) }),
    result: async ({ trainer, handles }, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
      runId,
      status,
      epochsCompleted,
      stepsCompleted,
      itemsProcessed,
      adapter: writeLoraAdapterFile(trainer.adapter, { model: handles.policy.info.model, updates: trainer.optimizer.state.step }),
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
async function loraEngine() {
  const [{ loraModel, LoraGrpoTrainer }, { mergeLoraIntoOnnx }, { createWebgpuLoraModel }, { loraTrainingDevice }] = await Promise.all([
    import('../../lora/grpo-trainer.js'),
    import('../../lora/onnx-merge.js'),
    import('../../lora/webgpu/model.js'),
    import('../../lora/webgpu/device.js'),
  ]);
  return { loraModel, LoraGrpoTrainer, mergeLoraIntoOnnx, createWebgpuLoraModel, loraTrainingDevice };
}

/** A run that trained on WebGPU resumes there (to continue bit for bit), so it needs WebGPU again. */
function checkWebgpuAt(runId: string, policy: LoraPolicy): void {
  if (policy.info.backend === 'webgpu' || hasWebgpu()) return;
  throw new UnsupportedError(`Run "${runId}" trains on WebGPU (engine 'webgpu') and resumes only there, to continue as it would have; this runtime has no WebGPU (${NO_GPU}). Resume it in a browser with WebGPU.`);
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

/** The adapter fits the model, and the model's weights can take the merge the sampler needs. */
function checkTrainable(weights: DecoderWeights, adapter: LoraAdapter): void {
  adapter.layers.forEach((layer, l) => {
    for (const [module, pair] of Object.entries(layer)) {
      const want = moduleDims(weights.shape, module as keyof typeof layer);
      if (pair.inDim !== want.inDim || pair.outDim !== want.outDim) {
        throw new InvalidInputError('adapter', `layer ${l} ${module} is [${pair.inDim} -> ${pair.outDim}]; the model's is [${want.inDim} -> ${want.outDim}].`);
      }
      if (!(weights.layers[l][module as keyof typeof layer].weight instanceof Float32Array)) {
        throw new UnsupportedError(`Layer ${l} ${module} is 4-bit: the sampler follows the adapter by merging it into the weights, which a 4-bit model cannot hold. Load the fp32 or fp16 export (dtype "fp32" or "fp16").`);
      }
    }
  });
}
