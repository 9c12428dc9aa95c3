/**
 * `gradientGrpo`: gradient GRPO on an LM-head adapter, as a loop shaped like the training-free one
 * (lib/train/loop.ts), reusing its run handle, schedule, seeds and reward plumbing. Per step (one
 * batch of items): sample a group per item from the adapted policy, reward it, then run
 * `numIterations` optimizer updates of `GrpoTrainer` on the step's groups, and commit the step with
 * the adapter and optimizer state in one store transaction.
 *
 * Finished items are stored as they finish, so `resumeGradientGrpo(runId)` continues from the first
 * unfinished item with the adapter of the last committed step: given the same seeds, a resumed run
 * ends where an uninterrupted one does.
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { MemoryStore } from '../../store/memory.js';
import type { GradientConfig, StepRecord } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { validateDataset } from '../../store/validate.js';
import type { Progress } from '../../run/events.js';
import { checkRunId, type RewardFunction } from '../training-free/options.js';
import { runBatchItems } from '../../run/driver.js';
import { LoopRun, newRunRecord, resumeStoredRun, stopRun, type Run, type RunStop } from '../../run/run.js';
import { progressAt, Schedule } from '../../run/schedule.js';
import { stepStats } from '../../run/stats.js';
import { libraryFreeStep } from '../training-free/step.js';
import { readAdapterFile, readCheckpoint, writeCheckpoint, type AdapterFile } from '../../grad/format.js';
import type { GradientEpochStats, GradientEvent } from './events.js';
import { rolloutItem } from './item.js';
import type { TrainStepMetrics } from '../../grad/metrics.js';
import { grpoConfigOf, resolveGradientConfig, validateGradientHandles, type GradientGrpoOptions, type GradientHandles } from './options.js';
import { groupRolloutBatch } from '../../grad/rollouts.js';
import { GrpoTrainer } from '../../grad/trainer.js';

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

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function gradientGrpo(options: GradientGrpoOptions): GradientRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveGradientConfig(options);
  const dataset = validateDataset(options.dataset);
  const initial = options.initialAdapter !== undefined ? readAdapterFile(options.initialAdapter, 'initialAdapter') : undefined;
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const store = options.store ?? new MemoryStore();
  return new LoopRun(runId, async (emit, signal) => {
    const run = newRunRecord('gradient', runId, config, dataset.length);
    await store.createRun(run, dataset);
    const trainer = createTrainer(options, config);
    if (initial) trainer.load({ a: initial.a, b: initial.b, m: zerosLike(initial), v: zerosLike(initial), updates: 0 });
    return drive({ store, runId, handles: options, rewards: options.rewards, resumed: false, trainer }, emit, signal);
  });
}

/**
 * Continues a stored gradient run from its first unfinished item, with the adapter and optimizer
 * state of its last committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeGradientGrpo(runId: string, options: GradientHandles & { store: Store }): GradientRun {
  return resumeStoredRun(runId, 'gradient', options, validateGradientHandles, async (run, rewards, emit: (event: GradientEvent) => Promise<void>, signal) => {
    const trainer = createTrainer(options, run.config);
    const checkpoint = await options.store.getAdapter(runId);
    if (checkpoint) trainer.load(readCheckpoint(checkpoint).state);
    return drive({ store: options.store, runId, handles: options, rewards, resumed: true, trainer }, emit, signal);
  });
}

function createTrainer(handles: GradientHandles, config: GradientConfig): GrpoTrainer {
  const { head } = handles.policy;
  if (head!.hiddenSize !== config.adapter.hiddenSize || head!.vocabSize !== config.adapter.vocabSize) {
    throw new InvalidInputError('policy', `has hidden size ${head!.hiddenSize} and vocabulary ${head!.vocabSize}; the run's adapter was made for ${config.adapter.hiddenSize} and ${config.adapter.vocabSize}.`);
  }
  return new GrpoTrainer(handles.policy, config.optimizer, grpoConfigOf(config), {
    temperature: config.temperature,
    advantages: { weights: config.rewards.map((r) => r.weight), scaleRewards: config.loss.scaleRewards },
    adapter: { rank: config.adapter.rank, scale: config.adapter.scale, seed: config.adapter.seed },
  });
}

function zerosLike(w: { a: Float32Array; b: Float32Array }) {
  return { a: new Float32Array(w.a.length), b: new Float32Array(w.b.length) };
}

interface DriveSetup {
  store: Store;
  runId: string;
  handles: GradientHandles;
  rewards: RewardFunction[];
  resumed: boolean;
  trainer: GrpoTrainer;
}

async function drive(setup: DriveSetup, emit: (event: GradientEvent) => Promise<void>, internal: AbortSignal): Promise<GradientResult> {
  const { store, runId, handles, trainer } = setup;
  const signal = handles.signal ? AbortSignal.any([handles.signal, internal]) : internal;
  const lock = await store.lockRun(runId);
  let stepsCompleted = 0;
  let itemsDone = 0;
  let started = false;
  let schedule: Schedule | undefined;
  const progress = (step: number): Progress => progressAt(schedule, step, itemsDone);
  const tally = () => ({
    epochsCompleted: schedule ? Math.floor(stepsCompleted / schedule.stepsPerEpoch) : 0,
    stepsCompleted,
    itemsProcessed: itemsDone,
  });

  try {
    const run = await store.getRun(runId);
    if (run?.kind !== 'gradient') throw new InvalidInputError('runId', `"${runId}" is not a gradient run.`);
    const { config } = run;
    const items = await store.getItems(runId);
    schedule = new Schedule(config, items.length);
    stepsCompleted = (await store.lastStep(runId))?.step ?? 0;
    itemsDone = stepsCompleted < schedule.totalSteps ? schedule.plan(stepsCompleted + 1).itemsBefore : schedule.totalItems;
    throwIfAborted(signal);
    if (run.status !== 'running') await store.setRunStatus(runId, { status: 'running' });
    started = true;
    await emit({ type: 'run-start', runId, resumed: setup.resumed, config, progress: progress(stepsCompleted + 1) });

    const ctx = { policy: handles.policy, config, rewards: setup.rewards, signal, emit };
    for (let step = stepsCompleted + 1; step <= schedule.totalSteps; step++) {
      const plan = schedule.plan(step);
      await emit({ type: 'step-start', step, epoch: plan.epoch, batch: plan.batch, items: plan.indices, progress: progress(step) });

      const results = await runBatchItems(store, runId, plan, signal, (position, index) => rolloutItem(ctx, plan, position, index, items[index]), async (result, reused) => {
        itemsDone += 1;
        await emit({ type: 'item-end', step, epoch: plan.epoch, item: result.index, result, reused, progress: progress(step) });
      });

      // Updates on the step's groups; the old log-probs are the rollouts' own.
      const batch = groupRolloutBatch(results.map((r) => ({ completions: r.rollouts, rewards: r.rollouts.map((x) => x.rewards) })));
      const prompts = results.map((r) => r.prompt);
      const training: TrainStepMetrics[] = [];
      for (let iteration = 1; iteration <= config.numIterations; iteration++) {
        throwIfAborted(signal);
        const { metrics } = await trainer.trainStep(batch, prompts, { signal });
        training.push(metrics);
        await emit({ type: 'train', step, epoch: plan.epoch, iteration, iterations: config.numIterations, metrics });
      }
      trainer.releaseStates();
      throwIfAborted(signal);

      const record = libraryFreeStep(plan, results, { training });
      const checkpoint = writeCheckpoint(await trainer.state(), trainer.shape, step, handles.policy.info.model);
      await store.commitStep(runId, record, { adapter: checkpoint });
      stepsCompleted = step;
      await emit({ type: 'step-end', step, epoch: plan.epoch, batch: plan.batch, stats: record.stats, training, progress: progress(step) });
      if (plan.lastOfEpoch) {
        const steps = await store.listSteps(runId, { from: step - plan.batch + 1, to: step });
        await emit({ type: 'epoch-end', epoch: plan.epoch, stats: gradientEpochStats(plan.epoch, steps), progress: progress(step) });
      }
    }

    await store.setRunStatus(runId, { status: 'completed' });
    await emit({ type: 'run-end', runId, status: 'completed', ...tally(), progress: progress(stepsCompleted) });
    return { runId, status: 'completed', ...tally(), adapter: await trainer.exportAdapter(), trainer };
  } catch (error) {
    trainer.releaseStates();
    const announce = started ? (end: RunStop) => emit({ type: 'run-end', runId, ...end, ...tally(), progress: progress(stepsCompleted) }) : undefined;
    if ((await stopRun(store, runId, error, signal, announce)) && started) return { runId, status: 'aborted', ...tally(), adapter: await trainer.exportAdapter(), trainer };
    trainer.dispose();
    throw error;
  } finally {
    await lock.release();
  }
}

/** Rewards of an epoch's steps and the last update's loss, KL and gradient norm. */
export function gradientEpochStats(epoch: number, steps: readonly StepRecord[]): GradientEpochStats {
  const stats = stepStats(steps.flatMap((s) => s.items));
  const last = steps.at(-1)?.training?.at(-1);
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
