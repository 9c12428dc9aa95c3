/**
 * Gradient GRPO on an LM-head adapter as a method of the driver (lib/run/driver.ts). Per step: the
 * driver samples a group per item from the adapted policy, rewards it and computes the step's
 * advantages; this method runs `numIterations` optimizer updates of `GrpoTrainer` on the step's
 * groups with exactly those advantages, and the step is committed with the adapter and optimizer
 * state in one store transaction.
 *
 * `resumeGradientGrpo(runId)` continues from the first unfinished item with the adapter of the
 * last committed step: given the same seeds, a resumed run ends where an uninterrupted one does.
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { MemoryStore } from '../../store/memory.js';
import type { GradientConfig, GradientStepPayload, LoraStepPayload, StepRecord } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { GRADIENT_RECORD, validateDataset } from '../../store/validate.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
import { stepStats } from '../../run/stats.js';
import { readAdapterFile, readCheckpoint, writeCheckpoint, type AdapterFile } from '../../grad/format.js';
import type { TrainStepMetrics } from '../../grad/metrics.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import { groupRolloutBatch, rolloutSampling } from '../../grad/rollouts.js';
import { GrpoTrainer } from '../../grad/trainer.js';
import type { GradientEpochStats, GradientEvent } from './events.js';
import { grpoConfigOf, resolveGradientConfig, validateGradientHandles, type GradientGrpoOptions, type GradientHandles } from './options.js';

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
  trainer: GrpoTrainer;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type GradientRun = Run<GradientEvent, GradientResult>;

interface GradientState {
  config: GradientConfig;
  handles: GradientHandles;
  trainer: GrpoTrainer;
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
      const trainer = createTrainer(handles, run.config);
      const checkpoint = last ? await store.getAdapter(run.id) : undefined;
      if (checkpoint) trainer.load(readCheckpoint(checkpoint).state);
      const control = last?.payload.training.at(-1)?.adaptiveEntropy;
      if (control && run.config.loss.adaptiveEntropy) trainer.restoreAdaptiveEntropy(control);
      else if (initial) trainer.load({ a: initial.a, b: initial.b, m: zerosLike(initial), v: zerosLike(initial), updates: 0 });
      return { config: run.config, handles, trainer };
    },

    // Updates on the step's groups with the driver's advantages; the old log-probs are the rollouts' own.
    async finishStep({ config, handles, trainer }, ctx, items, advantages) {
      const { plan, signal } = ctx;
      const training: TrainStepMetrics[] = [];
      // A step whose every group was flat (dynamic sampling left them all out) has nothing to update on.
      if (items.length > 0) {
        const groups = items.map((r) => ({ completions: r.rollouts, rewards: r.rollouts.map((x) => x.rewards) }));
        const batch = groupRolloutBatch(groups);
        const prompts = items.map((r) => r.prompt);
        // How the rollouts were sampled: with a filter, the trainer corrects for it (TRL's default).
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
      const adapter = writeCheckpoint(await trainer.state(), trainer.shape, plan.step, handles.policy.info.model);
      return { payload: { kind: 'gradient', training }, extras: { adapter }, end: { training } };
    },
    epochEnd: (_state, epoch, steps) => ({ stats: gradientEpochStats(epoch, steps) }),
    result: async ({ trainer }, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
      runId,
      status,
      epochsCompleted,
      stepsCompleted,
      itemsProcessed,
      adapter: await trainer.exportAdapter(),
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

function createTrainer(handles: GradientHandles, config: GradientConfig): GrpoTrainer {
  const { head } = handles.policy;
  if (head!.hiddenSize !== config.adapter.hiddenSize || head!.vocabSize !== config.adapter.vocabSize) {
    throw new InvalidInputError('policy', `has hidden size ${head!.hiddenSize} and vocabulary ${head!.vocabSize}; the run's adapter was made for ${config.adapter.hiddenSize} and ${config.adapter.vocabSize}.`);
  }
  return new GrpoTrainer(handles.policy, config.optimizer, grpoConfigOf(config), {
    temperature: config.temperature,
    ...(config.loss.maskTruncatedCompletions !== undefined ? { maskTruncatedCompletions: config.loss.maskTruncatedCompletions } : {}),
    ...(config.loss.adaptiveEntropy ? { adaptiveEntropy: config.loss.adaptiveEntropy } : {}),
    advantages: { weights: config.rewards.map((r) => r.weight), scaleRewards: config.loss.scaleRewards },
    adapter: { rank: config.adapter.rank, scale: config.adapter.scale, seed: config.adapter.seed },
  });
}

function zerosLike(w: { a: Float32Array; b: Float32Array }) {
  return { a: new Float32Array(w.a.length), b: new Float32Array(w.b.length) };
}

/** Rewards of an epoch's steps and the last update's loss, KL and gradient norm. */
export function gradientEpochStats(epoch: number, steps: readonly StepRecord<GradientStepPayload | LoraStepPayload>[]): GradientEpochStats {
  const stats = stepStats(steps.flatMap((s) => s.items));
  const last = steps.at(-1)?.payload.training.at(-1);
  return {
    epoch,
    steps: steps.length,
    groups: stats.groups,
    zeroSpreadGroups: stats.zeroSpreadGroups,
    rollouts: stats.rollouts,
    meanReward: stats.meanReward,
    stdReward: stats.stdReward,
    loss: last?.loss ?? null,
    kl: last?.kl ?? null,
    gradNorm: last?.gradNorm ?? null,
  };
}
