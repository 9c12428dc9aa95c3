/**
 * Gradient GRPO on an LM-head adapter as a method of the driver (lib/run/driver.ts). Per step: the
 * driver samples a group per item from the adapted policy, rewards it and computes the step's
 * advantages; this method runs `numIterations` optimizer updates of `GrpoTrainer` over the head
 * adapter's engine on the step's groups with exactly those advantages, and the step is committed with the adapter and optimizer
 * state in one store transaction.
 *
 * `resumeGradientGrpo(runId)` continues from the first unfinished item with the adapter of the
 * last committed step: given the same seeds, a resumed run ends where an uninterrupted one does.
 */
import { InvalidInputError } from '../../errors.js';
import { MemoryStore } from '../../store/memory.js';
import type { GradientConfig } from './record.js';
import type { Store } from '../../store/types.js';
import { GRADIENT_RECORD } from './record.js';
import { validateDataset } from '../../core/dataset.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
import { readAdapterFile, readCheckpoint, writeCheckpoint, type AdapterFile } from '../../grad/format.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import { headEngine, type HeadAdapterEngine } from '../../train/head-engine.js';
import type { GrpoTrainer } from '../../train/trainer.js';
import { gradientEpochStats, runTrainer, trainOnStep } from '../grpo-update.js';
import type { GradientEvent } from './events.js';
import { resolveGradientConfig, validateGradientHandles, type GradientGrpoOptions, type GradientHandles } from './options.js';

export interface GradientResult {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The adapter as it stands at the end, as an adapter file. */
  adapter: AdapterFile;
  /**
   * The trainer, still attached to the policy (which keeps sampling from the trained adapter):
   * `dispose()` it to return to the base model and free its memory.
   */
  trainer: GrpoTrainer<HeadAdapterEngine>;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type GradientRun = Run<GradientEvent, GradientResult>;

interface GradientState {
  config: GradientConfig;
  handles: GradientHandles;
  trainer: GrpoTrainer<HeadAdapterEngine>;
}

/** Opens a gradient run's trainer: a new run's from `initial` (or fresh), a resumed run's from its checkpoint. */
function gradientMethod(initial?: HeadAdapterWeights): Method<'gradient', GradientState, GradientHandles, GradientResult> {
  return {
    kind: 'gradient',
    resumeWith: 'resumeGradientGrpo (webgrpo/grad)',
    record: GRADIENT_RECORD,
    start: (options) => gradientGrpo(options as unknown as GradientGrpoOptions),
    resume: (runId, handles) => resumeGradientGrpo(runId, handles),
    validateHandles: validateGradientHandles,
    advantages: (config) => ({ scaleRewards: config.loss.scaleRewards }),

    async open({ run, store, handles, last }) {
      const trainer = runTrainer(headEngine(handles.policy, { adapter: adapterOf(handles, run.config) }), run.config, last);
      const checkpoint = last ? await store.getAdapter(run.id) : undefined;
      if (checkpoint) trainer.load(readCheckpoint(checkpoint).state);
      else if (initial) trainer.load({ a: initial.a, b: initial.b, m: zerosLike(initial), v: zerosLike(initial), updates: 0 });
      return { config: run.config, handles, trainer };
    },

    async finishStep({ config, handles, trainer }, ctx, items, advantages) {
      const training = await trainOnStep(trainer, config, ctx, items, advantages);
      const adapter = writeCheckpoint(await trainer.state(), trainer.engine.shape, ctx.plan.step, handles.policy.info.model);
      return { payload: { kind: 'gradient', training }, extras: { adapter }, end: { training } };
    },
    epochEnd: (_state, epoch, steps) => ({ stats: gradientEpochStats(epoch, steps) }),
    result: async ({ trainer }, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
      runId,
      status,
      epochsCompleted,
      stepsCompleted,
      itemsProcessed,
      adapter: await trainer.engine.exportAdapter(),
      trainer,
    }),
    interrupted: ({ trainer }) => trainer.releaseStates(),
    dispose: ({ trainer }) => trainer.dispose(),
  };
}

/** The gradient method as the registry holds it (runs resume from their checkpoint). */
export const gradientMethodHooks = gradientMethod();

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function gradientGrpo(options: GradientGrpoOptions): GradientRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveGradientConfig(options);
  const dataset = validateDataset(options.dataset);
  const initial = options.initialAdapter !== undefined ? readAdapterFile(options.initialAdapter, 'initialAdapter') : undefined;
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const run = newRunRecord('gradient', runId, config, dataset.length);
  return startRun(initial ? gradientMethod(initial) : gradientMethodHooks, run, dataset, options, options.store ?? new MemoryStore());
}

/**
 * Continues a stored gradient run from its first unfinished item, with the adapter and optimizer
 * state of its last committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeGradientGrpo(runId: string, options: GradientHandles & { store: Store }): GradientRun {
  return resumeRun(gradientMethodHooks, runId, options);
}

/** The run's adapter shape and seed, checked against the policy's head. */
function adapterOf(handles: GradientHandles, config: GradientConfig) {
  const { head } = handles.policy;
  if (head!.hiddenSize !== config.adapter.hiddenSize || head!.vocabSize !== config.adapter.vocabSize) {
    throw new InvalidInputError('policy', `has hidden size ${head!.hiddenSize} and vocabulary ${head!.vocabSize}; the run's adapter was made for ${config.adapter.hiddenSize} and ${config.adapter.vocabSize}.`);
  }
  return { rank: config.adapter.rank, scale: config.adapter.scale, seed: config.adapter.seed };
}

function zerosLike(w: { a: Float32Array; b: Float32Array }) {
  return { a: new Float32Array(w.a.length), b: new Float32Array(w.b.length) };
}
