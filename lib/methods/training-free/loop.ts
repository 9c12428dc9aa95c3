/**
 * `trainingFreeGrpo`: the Training-Free GRPO loop (arXiv 2510.08191). Per step (one batch of
 * items): roll out a group per item with the current library, reward, compute advantages, let the
 * critic summarise, critique and propose operations per group, merge the batch's operations, apply
 * them, and commit the step with a library snapshot in one store transaction.
 *
 * The run is an async iterable of events and advances as it is iterated. Finished items are stored
 * as they finish, so `resumeTrainingFreeGrpo(runId)` continues from the first unfinished item: a
 * run killed mid-step and resumed ends with the same library, byte for byte, as an uninterrupted
 * run given the same model outputs.
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { normalizeExperienceLibrary } from '../../experience/normalize.js';
import { estimateTokens, formatExemplar, formatLesson } from '../../experience/render.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import { itemResultGroup } from '../../export/run.js';
import type { Policy } from '../../policy/types.js';
import { MemoryStore } from '../../store/memory.js';
import type { ItemResult, RunRecord, RunWarning } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { validateDataset } from '../../store/validate.js';
import type { Progress, TrainingFreeEvent } from '../../run/events.js';
import { runItem, type ItemContext } from './item.js';
import {
  checkRunId,
  resolveConfig,
  validateHandles,
  type LoopHandles,
  type RewardFunction,
  type TrainingFreeGrpoOptions,
} from './options.js';
import { LoopRun, newRunRecord, resumeStoredRun, stopRun, type Run, type RunStop } from '../../run/run.js';
import { progressAt, Schedule } from '../../run/schedule.js';
import { epochStats } from '../../run/stats.js';
import { finishStep } from './step.js';

export interface TrainingFreeResult {
  runId: string;
  status: 'completed' | 'aborted';
  library: ExperienceLibrary;
  epochsCompleted: number;
  stepsCompleted: number;
  /** Items finished over the whole run (each epoch counts every item again). */
  itemsProcessed: number;
  warnings: number;
}

/**
 * A run in progress: iterate it for events (once), or await `result()` to run it to the end (an
 * aborted run resolves with status `aborted`, a failed one rejects).
 */
export type TrainingFreeRun = Run<TrainingFreeEvent, TrainingFreeResult>;

export interface ResumeOptions extends LoopHandles {
  /** The store that holds the run. */
  store: Store;
}

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function trainingFreeGrpo(options: TrainingFreeGrpoOptions): TrainingFreeRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveConfig(options);
  const dataset = validateDataset(options.dataset);
  const initialLibrary = normalizeExperienceLibrary(options.initialExperiences, { maxLength: config.maxExperienceLength });
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const store = options.store ?? new MemoryStore();
  return new LoopRun(runId, async (emit, signal) => {
    const run = newRunRecord('training-free', runId, config, dataset.length, initialLibrary);
    await store.createRun(run, dataset);
    return drive({ store, runId, handles: options, rewards: options.rewards, resumed: false }, emit, signal);
  });
}

/**
 * Continues a stored run from its first unfinished item. The configuration comes from the store;
 * pass the same policy, critic and reward functions (matched by name) as when it started.
 */
export function resumeTrainingFreeGrpo(runId: string, options: ResumeOptions): TrainingFreeRun {
  return resumeStoredRun(runId, 'training-free', options, validateHandles, (_run, rewards, emit: Emit, signal) =>
    drive({ store: options.store, runId, handles: options, rewards, resumed: true }, emit, signal),
  );
}

type Emit = (event: TrainingFreeEvent) => Promise<void>;

interface DriveSetup {
  store: Store;
  runId: string;
  handles: LoopHandles;
  rewards: RewardFunction[];
  resumed: boolean;
}

async function drive(setup: DriveSetup, emit: Emit, internal: AbortSignal): Promise<TrainingFreeResult> {
  const { store, runId, handles } = setup;
  const signal = handles.signal ? AbortSignal.any([handles.signal, internal]) : internal;
  const lock = await store.lockRun(runId);
  let library: ExperienceLibrary | undefined;
  let stepsCompleted = 0;
  let itemsDone = 0;
  let warnings = 0;
  let schedule: Schedule | undefined;
  const progress = (step: number): Progress => progressAt(schedule, step, itemsDone);
  const tally = () => ({
    library: library as ExperienceLibrary,
    epochsCompleted: schedule ? Math.floor(stepsCompleted / schedule.stepsPerEpoch) : 0,
    stepsCompleted,
    itemsProcessed: itemsDone,
    warnings,
  });

  try {
    const run = (await store.getRun(runId)) as RunRecord;
    if (run.kind !== 'training-free') throw new InvalidInputError('runId', `"${runId}" is a ${run.kind} run, not a training-free one.`);
    const { config } = run;
    const items = await store.getItems(runId);
    schedule = new Schedule(config, items.length);
    const last = await store.lastStep(runId);
    library = last?.library ?? run.initialLibrary;
    stepsCompleted = last?.step ?? 0;
    itemsDone = stepsCompleted < schedule.totalSteps ? schedule.plan(stepsCompleted + 1).itemsBefore : schedule.totalItems;
    if (stepsCompleted > 0) {
      for (const step of await store.listSteps(runId)) warnings += step.warnings.length + step.items.reduce((n, i) => n + i.warnings.length, 0);
    }
    throwIfAborted(signal);
    if (run.status !== 'running') await store.setRunStatus(runId, { status: 'running' });

    const policy = handles.policy;
    const tokens = tokenCounter(handles.countTokens, policy);
    const warn = async (warning: RunWarning) => {
      warnings += 1;
      await emit({ type: 'warning', warning });
    };
    await emit({ type: 'run-start', runId, resumed: setup.resumed, config, library, progress: progress(stepsCompleted + 1) });

    for (let step = stepsCompleted + 1; step <= schedule.totalSteps; step++) {
      const plan = schedule.plan(step);
      const stepLibrary = library;
      await tokens.prepare(stepLibrary);
      await emit({ type: 'step-start', step, epoch: plan.epoch, batch: plan.batch, items: plan.indices, library: stepLibrary, progress: progress(step) });

      const finished = new Map((await store.getItemResults(runId, step)).map((r) => [r.position, r]));
      const stepAbort = new AbortController();
      const stepSignal = AbortSignal.any([signal, stepAbort.signal]);
      const ctx: ItemContext = {
        policy,
        critic: handles.critic ?? policy,
        config,
        signal: stepSignal,
        rewards: setup.rewards,
        countTokens: tokens.count,
        emit: async (event) => {
          if (event.type === 'warning') warnings += 1;
          await emit(event);
        },
      };
      const results: ItemResult[] = new Array(plan.indices.length);
      await eachConcurrently(plan.indices.length, config.concurrency, stepAbort, async (position) => {
        const index = plan.indices[position];
        const reused = finished.get(position);
        const itemResult = reused ?? (await runItem(ctx, plan, position, index, items[index], stepLibrary));
        throwIfAborted(stepSignal);
        if (reused) warnings += reused.warnings.length;
        else await store.putItemResult(runId, itemResult);
        results[position] = itemResult;
        itemsDone += 1;
        await emit({ type: 'item-end', step, epoch: plan.epoch, item: index, result: itemResult, reused: reused !== undefined, progress: progress(step) });
      });
      throwIfAborted(signal);

      const record = await finishStep({ critic: ctx.critic, config, signal }, plan, results, stepLibrary, warn);
      throwIfAborted(signal);
      await store.commitStep(runId, record);
      library = record.library;
      stepsCompleted = step;
      await emit({
        type: 'operations',
        step,
        epoch: plan.epoch,
        ...(record.merge ? { merge: record.merge } : {}),
        proposed: record.proposed,
        applied: record.applied,
        skipped: record.skippedOperations,
        library,
      });
      await emit({ type: 'step-end', step, epoch: plan.epoch, batch: plan.batch, stats: record.stats, library, progress: progress(step) });
      if (plan.lastOfEpoch) {
        // Read back from the store, so an epoch finished after a resume includes its earlier steps.
        const steps = await store.listSteps(runId, { from: step - plan.batch + 1, to: step });
        if (handles.onEpoch) await handles.onEpoch({ epoch: plan.epoch, groups: steps.flatMap((s) => s.items.map((r) => itemResultGroup(runId, r))) });
        await emit({ type: 'epoch-end', epoch: plan.epoch, stats: epochStats(plan.epoch, steps, library), library, progress: progress(step) });
      }
    }

    await store.setRunStatus(runId, { status: 'completed' });
    await emit({ type: 'run-end', runId, status: 'completed', ...tally(), progress: progress(stepsCompleted) });
    return { runId, status: 'completed', ...tally() };
  } catch (error) {
    // The run has started once its library is known.
    const started = library !== undefined;
    const announce = started ? (end: RunStop) => emit({ type: 'run-end', runId, ...end, ...tally(), progress: progress(stepsCompleted) }) : undefined;
    if ((await stopRun(store, runId, error, signal, announce)) && started) return { runId, status: 'aborted', ...tally() };
    throw error;
  } finally {
    await lock.release();
  }
}

/**
 * Runs `task(0..n-1)` on up to `limit` at once, in order of start. On the first failure the others
 * are aborted through `abort`, every task is awaited (none outlives the step), and the failure is
 * rethrown.
 */
async function eachConcurrently(n: number, limit: number, abort: AbortController, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (next < n && !failure) {
      const i = next++;
      try {
        await task(i);
      } catch (error) {
        failure ??= { error };
        abort.abort(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
  if (failure) throw failure.error;
}

/**
 * Counts tokens of library entries with the policy's own tokenizer where it has one (looked up
 * before each step, since `encode` is async), else with the character estimate.
 */
function tokenCounter(custom: ((text: string) => number) | undefined, policy: Policy) {
  const cache = new Map<string, number>();
  return {
    count: custom ?? ((text: string) => cache.get(text) ?? estimateTokens(text)),
    async prepare(library: ExperienceLibrary): Promise<void> {
      if (custom || !policy.encode) return;
      const texts = [...library.entries.map(formatLesson), ...library.exemplars.map(formatExemplar)];
      for (const text of texts) if (!cache.has(text)) cache.set(text, (await policy.encode(text)).length);
    },
  };
}
