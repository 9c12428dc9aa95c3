/**
 * `routerGrpo`: GRPO routing as a loop shaped like the training-free and gradient ones, reusing
 * their run handle, schedule, seeds and reward plumbing. Per step (one batch of items): every
 * completion of an item's group is routed to an arm by a `GrpoRouter` for the item's query class,
 * sampled with that arm's prompt and temperature, and rewarded; each scorable reward is a router
 * sample. At the step's end the router is updated and committed with the step.
 *
 * Finished items are stored as they finish, so `resumeRouterGrpo(runId)` continues from the first
 * unfinished item with the router of the last committed step (the finished items' samples handed
 * to it again). Each item's routing draws from its own seed, so a resumed run ends with the same
 * router as an uninterrupted one.
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { mulberry32, type Rng } from '../../math/random.js';
import { MemoryStore } from '../../store/memory.js';
import type { StepRouting } from '../../store/records.js';
import type { Store } from '../../store/types.js';
import { validateDataset } from '../../store/validate.js';
import type { Progress } from '../../run/events.js';
import { checkRunId, validateHandles, type RewardFunction } from '../training-free/options.js';
import { runBatchItems } from '../../run/driver.js';
import { LoopRun, newRunRecord, resumeStoredRun, stopRun, type Run, type RunStop } from '../../run/run.js';
import { progressAt, Schedule } from '../../run/schedule.js';
import { libraryFreeStep } from '../training-free/step.js';
import type { RouterEvent } from './events.js';
import { observe, routeItem } from './item.js';
import { resolveRouterConfig, type RouterGrpoOptions, type RouterHandles } from './options.js';
import { GrpoRouter, type GrpoRouterState } from '../../route/router.js';

export interface RouterResult {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The router as it stands at the end (`GrpoRouter.fromJSON(router)` routes with it). */
  router: GrpoRouterState;
  /** `probabilities[queryClass][armId]` at the end. */
  probabilities: Record<string, Record<string, number>>;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type RouterRun = Run<RouterEvent, RouterResult>;

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function routerGrpo(options: RouterGrpoOptions): RouterRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveRouterConfig(options);
  const dataset = validateDataset(options.dataset);
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const store = options.store ?? new MemoryStore();
  return new LoopRun(runId, async (emit, signal) => {
    const run = newRunRecord('router', runId, config, dataset.length);
    await store.createRun(run, dataset);
    return drive({ store, runId, handles: options, rewards: options.rewards, resumed: false }, emit, signal);
  });
}

/**
 * Continues a stored router run from its first unfinished item, with the router of its last
 * committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeRouterGrpo(runId: string, options: RouterHandles & { store: Store }): RouterRun {
  return resumeStoredRun(runId, 'router', options, validateHandles, (_run, rewards, emit: (event: RouterEvent) => Promise<void>, signal) =>
    drive({ store: options.store, runId, handles: options, rewards, resumed: true }, emit, signal),
  );
}

interface DriveSetup {
  store: Store;
  runId: string;
  handles: RouterHandles;
  rewards: RewardFunction[];
  resumed: boolean;
}

/** `probabilities[queryClass][armId]` for every class the router has samples of. */
export function routingProbabilities(router: GrpoRouter, armIds: readonly string[]): Record<string, Record<string, number>> {
  const { sampleCounts } = router.toJSON();
  return Object.fromEntries(
    Object.keys(sampleCounts).map((queryClass) => {
      const probabilities = router.probabilities(queryClass, armIds);
      return [queryClass, Object.fromEntries(armIds.map((id, i) => [id, probabilities[i]]))];
    }),
  );
}

async function drive(setup: DriveSetup, emit: (event: RouterEvent) => Promise<void>, internal: AbortSignal): Promise<RouterResult> {
  const { store, runId, handles } = setup;
  const signal = handles.signal ? AbortSignal.any([handles.signal, internal]) : internal;
  const lock = await store.lockRun(runId);
  let stepsCompleted = 0;
  let itemsDone = 0;
  let started = false;
  let schedule: Schedule | undefined;
  let router: GrpoRouter | undefined;
  let armIds: string[] = [];
  const progress = (step: number): Progress => progressAt(schedule, step, itemsDone);
  const tally = () => ({
    epochsCompleted: schedule ? Math.floor(stepsCompleted / schedule.stepsPerEpoch) : 0,
    stepsCompleted,
    itemsProcessed: itemsDone,
  });
  // Only called once the run has started, when the router exists.
  const outcome = (status: 'completed' | 'aborted'): RouterResult => ({
    runId,
    status,
    ...tally(),
    router: router!.toJSON(),
    probabilities: routingProbabilities(router!, armIds),
  });

  try {
    const run = await store.getRun(runId);
    if (run?.kind !== 'router') throw new InvalidInputError('runId', `"${runId}" is not a router run.`);
    const { config } = run;
    armIds = config.arms.map((a) => a.id);
    const items = await store.getItems(runId);
    schedule = new Schedule(config, items.length);
    const last = await store.lastStep(runId);
    stepsCompleted = last?.step ?? 0;
    itemsDone = stepsCompleted < schedule.totalSteps ? schedule.plan(stepsCompleted + 1).itemsBefore : schedule.totalItems;
    // The router draws from `draw`, which routeItem reseeds per item (ctx.reseed).
    let draw: Rng = mulberry32(config.seed);
    const seeded = { rng: () => draw() };
    router = last?.routing ? GrpoRouter.fromJSON(last.routing.state, seeded) : new GrpoRouter({ ...config.router, ...seeded });
    throwIfAborted(signal);
    if (run.status !== 'running') await store.setRunStatus(runId, { status: 'running' });
    started = true;
    await emit({ type: 'run-start', runId, resumed: setup.resumed, config, progress: progress(stepsCompleted + 1) });

    const ctx = { policy: handles.policy, config, rewards: setup.rewards, signal, emit, router, reseed: (seed: number) => (draw = mulberry32(seed)) };
    for (let step = stepsCompleted + 1; step <= schedule.totalSteps; step++) {
      const plan = schedule.plan(step);
      await emit({ type: 'step-start', step, epoch: plan.epoch, batch: plan.batch, items: plan.indices, progress: progress(step) });

      const results = await runBatchItems(store, runId, plan, signal, (position, index) => routeItem(ctx, plan, position, index, items[index]), async (result, reused) => {
        // Later items of the step route with these samples counted, resumed or not.
        observe(ctx.router, result);
        itemsDone += 1;
        await emit({ type: 'item-end', step, epoch: plan.epoch, item: result.index, result, reused, progress: progress(step) });
      });

      const stats = router.update();
      const routing: StepRouting = { state: router.toJSON(), probabilities: routingProbabilities(router, armIds), stats };
      const record = libraryFreeStep(plan, results, { routing });
      await store.commitStep(runId, record);
      stepsCompleted = step;
      await emit({ type: 'step-end', step, epoch: plan.epoch, batch: plan.batch, stats: record.stats, routing, progress: progress(step) });
    }

    await store.setRunStatus(runId, { status: 'completed' });
    await emit({ type: 'run-end', runId, status: 'completed', ...tally(), progress: progress(stepsCompleted) });
    return outcome('completed');
  } catch (error) {
    const announce = started ? (end: RunStop) => emit({ type: 'run-end', runId, ...end, ...tally(), progress: progress(stepsCompleted) }) : undefined;
    if ((await stopRun(store, runId, error, signal, announce)) && started) return outcome('aborted');
    throw error;
  } finally {
    await lock.release();
  }
}
