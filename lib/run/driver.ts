/**
 * The driver: the one GRPO loop, for every method (method.ts). It owns the run's lock and signal,
 * the schedule and resume, the events, `onEpoch`, the stop and the release; a method only fills
 * in its hooks, and each step runs as step.ts says (sample and reward, advantages, the method,
 * the commit).
 *
 * With an `evaluation` split, the policy is evaluated on it before the first step and at the end of
 * each due epoch (held-out.ts), kept with the run and announced as an `eval` event.
 *
 * A run killed anywhere and resumed continues from its first unfinished item: finished items come
 * back from the store, the rest are sampled again from the same seeds, so the step's groups, its
 * advantages and everything after them are those of an uninterrupted run. A due evaluation that
 * was not kept (killed between a commit and its end) runs first.
 */
import { InvalidInputError, throwIfAborted } from '../errors.js';
import type { AnyRunRecord } from '../store/records/index.js';
import { validateDataset } from '../core/dataset.js';
import { MemoryStore } from '../store/memory/store.js';
import { emptyLibrary } from '../experience/types.js';
import type { Store } from '../store/store.js';
import { resolveEvaluation } from './held-out.js';
import type { AnyMethod, Method, MethodTypes, NewRun, ResolvedMethodTypes, Reporter, RunTally } from './method.js';
import { checkRunId, matchRewards, validateHandles, type LoopHandles } from './options.js';
import { LoopRun, stopRun, storedRun, type Run, type RunOf, type RunStop } from './run.js';
import { Schedule } from './schedule.js';
import { evaluateAfter, progress, runStep, type DriveInputs, type Loop } from './step.js';

/**
 * Drives a run to its end: under its lock, the method's state opened on the stored run, every
 * step not committed yet, and the end stored and announced. A stop (the signal, a failure) is
 * stored too; an aborted run resolves with the method's result, a failed one rejects.
 */
async function drive<R>(method: AnyMethod<LoopHandles, R>, inputs: DriveInputs, emit: Reporter['emit'], internal: AbortSignal, initial: unknown): Promise<R> {
  const { store, runId, handles } = inputs;
  const signal = handles.signal ? AbortSignal.any([handles.signal, internal]) : internal;
  const lock = await store.lockRun(runId);
  let loop: Loop<R> | undefined;
  try {
    loop = await openLoop(method, inputs, emit, signal, initial);
    await startLoop(loop);
    for (let step = loop.done.steps + 1; step <= loop.schedule.totalSteps; step++) await runStep(loop, step);
    await store.setRunStatus(runId, { status: 'completed' });
    await runEnd(loop, { status: 'completed' });
    return await loop.state.result(tally(loop, 'completed'));
  } catch (error) {
    const opened = loop;
    if ((await stopRun(store, runId, error, signal, opened && ((end) => runEnd(opened, end)))) && opened) return opened.state.result(tally(opened, 'aborted'));
    opened?.state.dispose?.();
    throw error;
  } finally {
    await lock.release();
  }
}

/** The stored run read back (where it stands: its last committed step, its warnings) and the method's state opened on it. */
async function openLoop<R>(method: AnyMethod<LoopHandles, R>, inputs: DriveInputs, emit: Reporter['emit'], signal: AbortSignal, initial: unknown): Promise<Loop<R>> {
  const { store, runId, handles } = inputs;
  const run = await storedRun(store, runId, [method.kind]);
  const { config } = run;
  const items = await store.getItems(runId);
  const schedule = new Schedule(config, items.length);
  const last = await store.lastStep(runId);
  const steps = last?.step ?? 0;
  const done = { steps, items: steps < schedule.totalSteps ? schedule.plan(steps + 1).itemsBefore : schedule.totalItems, warnings: 0 };
  if (steps > 0) {
    for (const step of await store.listSteps(runId)) done.warnings += step.warnings.length + step.items.reduce((n, i) => n + i.warnings.length, 0);
  }
  const report: Reporter = {
    emit: async (event) => {
      if (event.type === 'warning') done.warnings += 1;
      await emit(event);
    },
    warn: (warning) => report.emit({ type: 'warning', warning }),
  };
  const state = await method.open({ run, store, handles, last, ...(initial !== undefined ? { initial } : {}) });
  const advantages = { groupSize: config.groupSize, weights: config.rewards.map((r) => r.weight), scaleRewards: 'group' as const, ...state.advantages };
  return { method, state, inputs, run, items, schedule, signal, report, done, advantages };
}

/** The run marked running and announced, then a due evaluation (before the first step, or one a stop left out). */
async function startLoop(loop: Loop): Promise<void> {
  const { run, inputs, done, schedule } = loop;
  throwIfAborted(loop.signal);
  if (run.status !== 'running') await inputs.store.setRunStatus(inputs.runId, { status: 'running' });
  await loop.report.emit({ type: 'run-start', runId: inputs.runId, resumed: inputs.resumed, config: run.config, ...loop.state.fields?.({ type: 'run-start' }), progress: progress(loop, done.steps + 1) });
  if (done.steps % schedule.stepsPerEpoch === 0) await evaluateAfter(loop, done.steps / schedule.stepsPerEpoch, run.evaluations ?? []);
}

/** The run's counts as its method's `result` and `run-end` see them. */
function tally(loop: Loop, status: RunTally['status']): RunTally {
  const { runId } = loop.inputs;
  const { steps, items, warnings } = loop.done;
  return { runId, status, epochsCompleted: Math.floor(steps / loop.schedule.stepsPerEpoch), stepsCompleted: steps, itemsProcessed: items, warnings };
}

/** Announces the run's end: completed, or stopped short (aborted, failed). */
function runEnd(loop: Loop, end: RunStop | { status: 'completed' }): Promise<void> {
  const t = tally(loop, end.status === 'completed' ? 'completed' : 'aborted');
  const counts = { epochsCompleted: t.epochsCompleted, stepsCompleted: t.stepsCompleted, itemsProcessed: t.itemsProcessed };
  return loop.report.emit({ type: 'run-end', runId: t.runId, ...end, ...counts, ...loop.state.fields?.({ type: 'run-end', tally: t }), progress: progress(loop, t.stepsCompleted) });
}

/**
 * A new run of `method` from its start options: checked now, synchronously (the method's own
 * options by its `create`, then the dataset, the run id and the held-out evaluation, resolved
 * once into the stored config), stored when the run is first iterated, then driven.
 */
export function startRun<E, T extends MethodTypes>(method: Method<T>, options: OptionsOf<T['kind'], ResolvedMethodTypes<T>['options']>): Run<E, ResolvedMethodTypes<T>['result']> {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  return startNewRun(method, options, method.create(options));
}

/**
 * `startRun` once the method's `create` has made the new run from `options`: a built-in method's
 * start function calls its own create, so its options are followed into its code, not through
 * the method object.
 */
export function startNewRun<E, T extends MethodTypes>(
  method: Method<T>,
  options: ResolvedMethodTypes<T>['options'],
  made: NewRun<RunOf<T['kind']>['config'], ResolvedMethodTypes<T>['initial']>,
): Run<E, ResolvedMethodTypes<T>['result']> {
  const dataset = validateDataset(options.dataset);
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const evaluation = resolveEvaluation(options.evaluation, made.config);
  const now = new Date().toISOString();
  const config = evaluation ? { ...made.config, evaluation } : made.config;
  const stored: AnyRunRecord = { id: runId, kind: method.kind, status: 'running', createdAt: now, updatedAt: now, config, initialLibrary: made.initialLibrary ?? emptyLibrary(), itemCount: dataset.length };
  const store: Store = options.store ?? new MemoryStore();
  return new LoopRun<E, ResolvedMethodTypes<T>['result']>(runId, async (emit, signal) => {
    // Checks that need the policy's async calls (its tokenizer) refuse the run before it is stored.
    await made.check?.(dataset, config);
    await store.createRun(stored, dataset);
    return drive(method, { store, runId, handles: options, rewards: options.rewards, resumed: false }, emit as Reporter['emit'], signal, made.initial);
  });
}

/** A method's start options; a method of no particular kind (the registry's) checks whatever it is handed. */
type OptionsOf<K extends string, O> = string extends K ? O & { [option: string]: unknown } : O;

/**
 * A stored run continued from its first unfinished item by the one of `methods` of its kind (the
 * gradient method resumes its two kinds, head adapter and LoRA). The common handles are checked
 * now (synchronously, as a start's options are); the stored run, the method's own handles and the
 * reward functions (matched by name) when the run is iterated, before anything is changed.
 */
export function resumeRun<E, R, H extends LoopHandles>(methods: readonly AnyMethod<H, R>[], runId: string, options: H & { store: Store }): Run<E, R> {
  if (!options || typeof options !== 'object' || !options.store) throw new InvalidInputError('store', 'pass the store that holds the run.');
  validateHandles(options);
  return new LoopRun<E, R>(runId, async (emit, signal) => {
    const run = await storedRun(options.store, runId, methods.map((m) => m.kind));
    const method = methods.find((m) => m.kind === run.kind)!;
    method.validateHandles(options);
    const rewards = matchRewards(run.config, options.rewards);
    return drive(method, { store: options.store, runId, handles: options, rewards, resumed: true }, emit as Reporter['emit'], signal, undefined);
  });
}
