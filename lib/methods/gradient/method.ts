/**
 * Gradient GRPO as a method of the driver (lib/run/driver.ts), on either adapter (adapter.ts): a
 * low-rank adapter on the LM head (`adapter: 'head'`, the default; runs of kind 'gradient') or
 * LoRA on every layer (`adapter: 'lora'`; kind 'lora'). Per step: the driver samples a group per
 * item from the policy, rewards it and computes the step's advantages; this method runs
 * `numIterations` updates of `GrpoTrainer` over the adapter's engine on the step's groups with
 * exactly those advantages, the policy follows the updated adapter, and the step is committed with
 * the adapter and optimizer state in one store transaction.
 *
 * `resumeGradientGrpo(runId)` continues a run of either kind from its first unfinished item with
 * the adapter of its last committed step: given the same seeds, a resumed run ends where an
 * uninterrupted one does.
 */
import type { PromptInput } from '../../core/policy.js';
import type { AdapterFile } from '../../train/head/format.js';
import type { LoraAdapterFile } from '../../lora/format.js';
import { resumeRun, startNewRun } from '../../run/driver.js';
import type { Drive, Method } from '../../run/method.js';
import type { Run } from '../../run/run.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import type { LoraAdapter } from '../../lora/adapter.js';
import type { Store } from '../../store/store.js';
import type { TrainingEngine } from '../../train/engine.js';
import type { HeadTrainingEngine } from '../../train/head-engine.js';
import type { LoraTrainingEngine } from '../../train/lora-engine.js';
import type { GrpoTrainer } from '../../train/trainer.js';
import type { OpenAdapter } from './adapter.js';
import type { GradientEvent, LoraEvent } from './events.js';
import { createHeadRun, openHeadAdapter } from './head.js';
import { createLoraRun, openLoraAdapter, validateLoraHandles, type LoraGrpoOptions, type LoraHandles } from './lora.js';
import { validateGradientHandles, type GradientGrpoOptions, type GradientHandles } from './options.js';
import { GRADIENT_RECORD, LORA_RECORD, type GradientStepPayload, type LoraStepPayload } from './record.js';
import { gradientEpochStats, trainOnStep, type UpdateConfig } from './update.js';

/** What a gradient run resolves with: where it stands, its adapter as a file, and its trainer. */
export interface TrainedResult<F, E extends TrainingEngine<PromptInput, unknown>> {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The adapter as it stands at the end, as an adapter file. */
  adapter: F;
  /**
   * The trainer, still attached to the policy (which keeps sampling from the trained model): its
   * engine holds the adapter (and, for LoRA, the frozen weights and their device buffers);
   * `dispose()` it to free them (the head adapter's: to return to the base model).
   */
  trainer: GrpoTrainer<E>;
}

/** A head-adapter run's result, and a LoRA run's (`exportPeftAdapter(trainer.engine.adapter, ...)` writes PEFT's folder). */
export type GradientResult = TrainedResult<AdapterFile, HeadTrainingEngine>;
export type LoraResult = TrainedResult<LoraAdapterFile, LoraTrainingEngine>;
/** A run in progress: iterate it for events (once), or await `result()`. */
export type GradientRun = Run<GradientEvent, GradientResult>;
export type LoraRun = Run<LoraEvent, LoraResult>;

/** The gradient method's two registry entries: one method, labelled by the adapter its runs train. */
export const headMethod: Method<{ kind: 'gradient'; handles: GradientHandles; result: GradientResult; payload: GradientStepPayload; options: GradientGrpoOptions; initial: HeadAdapterWeights }> = {
  kind: 'gradient',
  record: GRADIENT_RECORD,
  trains: 'head',
  create: createHeadRun,
  validateHandles: validateGradientHandles,
  open: async (ctx) => gradientDrive(ctx.run.config, await openHeadAdapter(ctx)),
};

export const loraMethod: Method<{ kind: 'lora'; handles: LoraHandles; result: LoraResult; payload: LoraStepPayload; options: LoraGrpoOptions; initial: LoraAdapter }> = {
  kind: 'lora',
  record: LORA_RECORD,
  trains: 'layers',
  create: createLoraRun,
  validateHandles: validateLoraHandles,
  open: async (ctx) => gradientDrive(ctx.run.config, await openLoraAdapter(ctx)),
};

/**
 * A drive of a gradient run on its open adapter: per step, `numIterations` updates on the step's
 * groups with the driver's advantages, then the step's payload and the adapter's checkpoint,
 * committed with it.
 */
function gradientDrive<P extends GradientStepPayload | LoraStepPayload, E extends TrainingEngine<PromptInput, unknown>, F>(config: UpdateConfig, adapter: OpenAdapter<P, E, F>): Drive<TrainedResult<F, E>, P> {
  const { trainer } = adapter;
  return {
    advantages: { scaleRewards: config.loss.scaleRewards },
    async finishStep(step, items, advantages) {
      await adapter.beforeUpdate?.();
      const payload = await adapter.payload(await trainOnStep(trainer, config, step, items, advantages));
      const { kind: _, ...end } = payload;
      return { payload, extras: { adapter: await adapter.checkpoint(step.plan.step) }, end };
    },
    fields: (moment) => (moment.type === 'epoch-end' ? { stats: gradientEpochStats(moment.epoch, moment.steps) } : moment.type === 'run-start' ? { ...adapter.startFields } : {}),
    result: async ({ runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({ runId, status, epochsCompleted, stepsCompleted, itemsProcessed, adapter: await adapter.file(), trainer }),
    dispose: () => trainer.dispose(),
  };
}

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function gradientGrpo(options: LoraGrpoOptions & { adapter: 'lora' }): LoraRun;
export function gradientGrpo(options: GradientGrpoOptions): GradientRun;
export function gradientGrpo(options: GradientGrpoOptions | (LoraGrpoOptions & { adapter: 'lora' })): GradientRun | LoraRun {
  return options?.adapter === 'lora' ? (startNewRun(loraMethod, options, createLoraRun(options)) as LoraRun) : (startNewRun(headMethod, options, createHeadRun(options)) as GradientRun);
}

/**
 * Continues a stored gradient run (either adapter's) from its first unfinished item, with the
 * adapter and optimizer state of its last committed step. Pass the same policy (model) and reward
 * functions (by name).
 */
export function resumeGradientGrpo(runId: string, options: GradientHandles & { store: Store }): GradientRun;
export function resumeGradientGrpo(runId: string, options: LoraHandles & { store: Store }): LoraRun;
export function resumeGradientGrpo(runId: string, options: (GradientHandles | LoraHandles) & { store: Store }): Run<GradientEvent | LoraEvent, GradientResult | LoraResult> {
  return resumeRun<GradientEvent | LoraEvent, GradientResult | LoraResult, GradientHandles | LoraHandles>([headMethod, loraMethod], runId, options);
}

/** `gradientGrpo({ ...options, adapter: 'lora' })`. */
export function loraGrpo(options: LoraGrpoOptions): LoraRun {
  return gradientGrpo({ ...options, adapter: 'lora' });
}

/** `resumeGradientGrpo` of a LoRA run. */
export function resumeLoraGrpo(runId: string, options: LoraHandles & { store: Store }): LoraRun {
  return resumeGradientGrpo(runId, options);
}
