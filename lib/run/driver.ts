/**
 * The driver: the one GRPO loop, for every method (method.ts). It owns the run's lock and signal,
 * the schedule and resume, item concurrency, the events, `onEpoch`, the commit, the stop and the
 * release; a method only fills in its hooks. One step, top to bottom:
 *
 *   1. sample and reward every unfinished item of the batch (`sampleItem`, the one sampling site)
 *   2. the step's advantages, computed once over all of its groups (any `scaleRewards`)
 *   3. each scored group to the method, each item stored as it finishes
 *   4. the method ends the step; the step record (common fields + the method's payload) is
 *      committed in one transaction
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
import { itemResultGroup } from './groups.js';
import { combinedRewards, computeAdvantages, type AdvantageResult } from '../math/advantages.js';
import type { ItemResult, RolloutRecord, RunRecord, StepPayloadBase, StepRecord, StepStats } from '../store/records.js';
import { validateDataset } from '../core/dataset.js';
import { MemoryStore } from '../store/memory.js';
import { emptyLibrary } from '../experience/types.js';
import { isFlat } from './dynamic-sampling.js';
import type { Store } from '../store/types.js';
import type { Progress } from './events.js';
import { evaluateHeldOut, evaluationDue, resolveEvaluation } from './held-out.js';
import type { AnyMethod, Drive, DriveInputs, ItemContext, Method, PreparedItem, Reporter, RunTally, SampledGroup, StartOptions } from './method.js';
import { checkRunId, matchRewards, validateHandles, type LoopHandles } from './options.js';
import { deriveSeed } from './random.js';
import { promptOf, rewardTable, sampleGroup, type RolloutSettings } from './rollout.js';
import { LoopRun, stopRun, storedRun, type Run, type RunOf, type RunStop } from './run.js';
import { progressAt, Schedule, type StepPlan } from './schedule.js';
import { groupStats, stepStats } from './stats.js';

type Emit = (event: { type: string } & Record<string, unknown>) => Promise<void>;
type Kind = string;
/** A method's step payload: an object of its own kind. */
type Payload<K extends Kind> = StepPayloadBase & { kind: K };

/**
 * A new run of `method` from its start options: checked now, synchronously (the method's own
 * options by its `create`, then the dataset and the run id), stored when the run is first
 * iterated, then driven.
 */
export function startRun<E, K extends Kind, H extends LoopHandles, R, P extends Payload<K>, O extends StartOptions<H>, I>(method: Method<K, H, R, P, O, I>, options: O): Run<E, R> {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const made = method.create(options);
  const dataset = validateDataset(options.dataset);
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const evaluation = resolveEvaluation(options.evaluation, made.config);
  const now = new Date().toISOString();
  const config = evaluation ? { ...made.config, evaluation } : made.config;
  const stored = { id: runId, kind: method.kind, status: 'running', createdAt: now, updatedAt: now, config, initialLibrary: made.initialLibrary ?? emptyLibrary(), itemCount: dataset.length };
  const store = options.store ?? new MemoryStore();
  return new LoopRun<E, R>(runId, async (emit, signal) => {
    // Checks that need the policy's async calls (its tokenizer) refuse the run before it is stored.
    await made.check?.(dataset, config);
    // Every store keeps any method's run record as plain data.
    await store.createRun(stored as unknown as RunRecord, dataset);
    return drive(method, { store, runId, handles: options, rewards: options.rewards, resumed: false }, emit as Emit, signal, made.initial);
  });
}

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
    return drive(method, { store: options.store, runId, handles: options, rewards, resumed: true }, emit as Emit, signal, undefined);
  });
}

/** An unfinished item after step 1: its prompt, its rollouts with rewards (advantages come in step 2). */
interface Scored {
  prepared: PreparedItem;
  group: SampledGroup;
  table: Array<Array<number | null>>;
  rewards: number[];
  rollouts: RolloutRecord[];
  /** Dynamic sampling: times the group was sampled again. */
  resamples: number;
}

async function drive<K extends Kind, H extends LoopHandles, R, P extends Payload<K>, O extends StartOptions<H>, I>(
  method: Method<K, H, R, P, O, I>,
  inputs: DriveInputs<H>,
  emit: Emit,
  internal: AbortSignal,
  initial: I | undefined,
): Promise<R> {
  const { store, runId, handles } = inputs;
  const signal = handles.signal ? AbortSignal.any([handles.signal, internal]) : internal;
  const lock = await store.lockRun(runId);
  let opened: Drive<R, P> | undefined;
  let schedule: Schedule | undefined;
  let stepsCompleted = 0;
  let itemsDone = 0;
  let warnings = 0;
  const progress = (step: number): Progress => progressAt(schedule, step, itemsDone);
  const tally = (status: RunTally['status']): RunTally => ({
    runId,
    status,
    epochsCompleted: schedule ? Math.floor(stepsCompleted / schedule.stepsPerEpoch) : 0,
    stepsCompleted,
    itemsProcessed: itemsDone,
    warnings,
  });
  const runEnd = (state: Drive<R, P>, end: RunStop | { status: 'completed' }) => {
    const t = tally(end.status === 'completed' ? 'completed' : 'aborted');
    const counts = { epochsCompleted: t.epochsCompleted, stepsCompleted: t.stepsCompleted, itemsProcessed: t.itemsProcessed };
    return emit({ type: 'run-end', runId, ...end, ...counts, ...state.fields?.({ type: 'run-end', tally: t }), progress: progress(stepsCompleted) });
  };
  const report: Reporter = {
    emit: async (event) => {
      if (event.type === 'warning') warnings += 1;
      await emit(event);
    },
    warn: (warning) => report.emit({ type: 'warning', warning }),
  };

  try {
    const run = (await storedRun(store, runId, [method.kind])) as RunOf<K>;
    const config = run.config as RunOf<K>['config'];
    const items = await store.getItems(runId);
    schedule = new Schedule(config, items.length);
    const last = (await store.lastStep(runId)) as StepRecord<P> | undefined;
    stepsCompleted = last?.step ?? 0;
    itemsDone = stepsCompleted < schedule.totalSteps ? schedule.plan(stepsCompleted + 1).itemsBefore : schedule.totalItems;
    if (stepsCompleted > 0) {
      for (const step of await store.listSteps(runId)) warnings += step.warnings.length + step.items.reduce((n, i) => n + i.warnings.length, 0);
    }
    const state = await method.open({ run, store, handles, last, ...(initial !== undefined ? { initial } : {}) });
    opened = state;
    throwIfAborted(signal);
    if (run.status !== 'running') await store.setRunStatus(runId, { status: 'running' });
    await emit({ type: 'run-start', runId, resumed: inputs.resumed, config, ...state.fields?.({ type: 'run-start' }), progress: progress(stepsCompleted + 1) });

    /** The held-out evaluation after `epoch` when it is due, kept with the run and announced. */
    const evaluateAfter = async (epoch: number, kept: ReadonlyArray<{ epoch: number }>) => {
      const { evaluation } = config;
      if (!evaluation || !evaluationDue(evaluation, epoch, schedule!.epochs) || kept.some((e) => e.epoch === epoch)) return;
      const { policy = handles.policy, prompt, temperature } = state.heldOut ?? {};
      const record = await evaluateHeldOut({ policy, rewards: inputs.rewards, config: { ...config, evaluation }, ...(prompt ? { prompt } : {}), ...(temperature ? { temperature } : {}), signal }, epoch, stepsCompleted);
      throwIfAborted(signal);
      await store.putEvaluation(runId, record);
      // Where the run stands: the step just finished, or before any, the first one (as run-start says).
      await report.emit({ type: 'eval', epoch, step: stepsCompleted, evaluation: record, progress: progress(Math.max(1, stepsCompleted)) });
    };
    if (stepsCompleted % schedule.stepsPerEpoch === 0) await evaluateAfter(stepsCompleted / schedule.stepsPerEpoch, run.evaluations ?? []);

    const sampling: RolloutSettings = config;
    const concurrency = state.concurrency ?? 1;
    const advantageOptions = { groupSize: sampling.groupSize, weights: sampling.rewards.map((r) => r.weight), scaleRewards: 'group' as const, ...state.advantages };

    // Dynamic sampling, where the run's config asks for it (gradient and lora runs can).
    const dynamic = 'dynamicSampling' in config ? config.dynamicSampling : undefined;

    /**
     * The one place a group is sampled: the method's own way, or one `generateGroup` of G. A
     * resampling (`attempt` above 0, dynamic sampling) draws from seeds of its own.
     */
    const sampleItem = (ctx: ItemContext, prepared: PreparedItem, attempt: number): Promise<SampledGroup> => {
      if (state.sample) return state.sample(ctx, prepared);
      const seed = attempt === 0 ? deriveSeed(sampling.seed, 'rollout', ctx.plan.epoch, ctx.index) : deriveSeed(sampling.seed, 'resample', ctx.plan.epoch, ctx.index, attempt);
      return sampleGroup(ctx.policy, prepared.prompt, sampling, { count: sampling.groupSize, temperature: sampling.temperature, seed }, ctx.signal);
    };

    /**
     * Step 1 for one item: its prompt, its group, every reward function on every completion; with
     * dynamic sampling, a flat group sampled again (up to the bound) and the last sampling kept.
     */
    const scoreItem = async (ctx: ItemContext): Promise<Scored> => {
      const ref = { step: ctx.plan.step, epoch: ctx.plan.epoch, item: ctx.index };
      const prepared = state.prepare ? await state.prepare(ctx) : { prompt: promptOf(ctx.item) };
      await report.emit({ type: 'item-start', ...ref, position: ctx.position, prompt: prepared.prompt, ...prepared.start });
      const usage = { promptTokens: 0, completionTokens: 0 };
      let attempt = 0;
      let group: SampledGroup;
      let table: Array<Array<number | null>>;
      let rewards: number[];
      for (;;) {
        group = await sampleItem(ctx, prepared, attempt);
        usage.promptTokens += group.usage.promptTokens;
        usage.completionTokens += group.usage.completionTokens;
        const again = attempt > 0 ? { resample: attempt } : {};
        await report.emit({ type: 'rollouts', ...ref, ...again, completions: group.completions, usage: group.usage });
        table = await rewardTable(inputs.rewards, group.completions, ctx.item, prepared.prompt, ctx.index);
        rewards = combinedRewards(table, advantageOptions.weights);
        await report.emit({ type: 'rewards', ...ref, ...again, rewards: table, combined: rewards.map((r) => (Number.isNaN(r) ? null : r)) });
        if (!dynamic || attempt >= dynamic.maxResamples || !isFlat(rewards)) break;
        attempt += 1;
        throwIfAborted(ctx.signal);
      }
      if (attempt > 0) group = { ...group, usage };
      const combined = rewards.map((r) => (Number.isNaN(r) ? null : r));
      const rollouts: RolloutRecord[] = group.completions.map((c, row) => ({
        text: c.text,
        tokenIds: [...c.tokenIds],
        logprobs: [...c.logprobs],
        // Kept only where sampling's filters made them differ: a gradient step's sampling correction needs them.
        ...(c.sampledLogprobs?.some((lp, t) => lp !== c.logprobs[t]) ? { sampledLogprobs: [...c.sampledLogprobs] } : {}),
        finishReason: c.finishReason,
        rewards: table[row],
        reward: combined[row],
        advantage: 0,
      }));
      return { prepared, group, table, rewards, rollouts, resamples: attempt };
    };

    for (let step = stepsCompleted + 1; step <= schedule.totalSteps; step++) {
      const plan = schedule.plan(step);
      await report.emit({ type: 'step-start', step, epoch: plan.epoch, batch: plan.batch, items: plan.indices, ...state.fields?.({ type: 'step-start', plan }), progress: progress(step) });

      const finished = new Map((await store.getItemResults(runId, step)).map((r) => [r.position, r]));
      const stepAbort = new AbortController();
      const stepSignal = AbortSignal.any([signal, stepAbort.signal]);
      const contexts: ItemContext[] = plan.indices.map((index, position) => ({ ...report, plan, position, index, item: items[index], signal: stepSignal, policy: handles.policy }));

      // 1. Sample and reward the unfinished items; a resumed step's finished ones come from the store.
      const scored = new Array<Scored | undefined>(contexts.length);
      await eachConcurrently(contexts.length, concurrency, stepAbort, async (position) => {
        if (finished.has(position)) return;
        const item = await scoreItem(contexts[position]);
        throwIfAborted(stepSignal);
        item.group.rewarded?.(item.rollouts);
        scored[position] = item;
      });
      throwIfAborted(signal);

      // 2. The step's advantages, once, over its groups in batch order: with dynamic sampling, over
      // the groups whose rewards differ (the flat ones are left out of the update).
      const rewardsOf = (position: number) => finished.get(position)?.rollouts.map((r) => r.reward) ?? scored[position]!.rewards;
      const kept = contexts.map((_, position) => position).filter((position) => !dynamic || !isFlat(rewardsOf(position)));
      const table = kept.flatMap((position) => finished.get(position)?.rollouts.map((r) => r.rewards) ?? scored[position]!.table);
      const advantages = kept.length > 0 ? computeAdvantages(table, advantageOptions) : emptyAdvantages();
      const rowOf = new Map(kept.map((position, k) => [position, k * sampling.groupSize]));

      // 3. Each group to the method; each item stored as it finishes, so a resume never redoes it.
      const results = new Array<ItemResult>(contexts.length);
      await eachConcurrently(contexts.length, concurrency, stepAbort, async (position) => {
        const ctx = contexts[position];
        const reused = finished.get(position);
        const result = reused ?? (await finishItem(state, ctx, scored[position]!, advantages, rowOf.get(position)));
        throwIfAborted(stepSignal);
        if (reused) warnings += reused.warnings.length;
        else await store.putItemResult(runId, result);
        results[position] = result;
        itemsDone += 1;
        await report.emit({ type: 'item-end', step, epoch: plan.epoch, item: ctx.index, result, reused: reused !== undefined, progress: progress(step) });
      });
      throwIfAborted(signal);

      // 4. The method ends the step (on the groups the advantages cover); the record is committed in one transaction.
      const outcome = await state.finishStep({ ...report, plan, signal }, kept.map((position) => results[position]), advantages);
      throwIfAborted(signal);
      const record: StepRecord<P> = {
        step,
        epoch: plan.epoch,
        batch: plan.batch,
        items: results,
        stats: { ...stepStats(results), ...(dynamic ? dynamicStats(results, kept.length) : {}) },
        warnings: outcome.warnings ?? [],
        committedAt: new Date().toISOString(),
        payload: { ...outcome.payload, kind: method.kind },
      };
      // Every store keeps any method's payload as plain data.
      await store.commitStep(runId, record as unknown as StepRecord, outcome.extras);
      stepsCompleted = step;
      for (const event of outcome.committed?.() ?? []) await report.emit(event);
      await report.emit({ type: 'step-end', step, epoch: plan.epoch, batch: plan.batch, stats: record.stats, ...outcome.end, progress: progress(step) });
      if (plan.lastOfEpoch) {
        await endEpoch(method, state, inputs, plan, report.emit, progress(step));
        await evaluateAfter(plan.epoch, []);
      }
    }

    await store.setRunStatus(runId, { status: 'completed' });
    await runEnd(state, { status: 'completed' });
    return await state.result(tally('completed'));
  } catch (error) {
    const announce = opened ? (end: RunStop) => runEnd(opened!, end) : undefined;
    if ((await stopRun(store, runId, error, signal, announce)) && opened) return opened.result(tally('aborted'));
    opened?.dispose?.();
    throw error;
  } finally {
    await lock.release();
  }
}

/**
 * Step 3 for one item: its rollouts' advantages (the step's, from `row`; zeros for a group left
 * out of the update), its result, the method's work on it.
 */
async function finishItem<R, P extends StepPayloadBase>(
  state: Drive<R, P>,
  ctx: ItemContext,
  scored: Scored,
  advantages: AdvantageResult,
  row: number | undefined,
): Promise<ItemResult> {
  const { plan, index, position } = ctx;
  const g = scored.rollouts.length;
  const own = row === undefined ? new Array<number>(g).fill(0) : advantages.advantages.slice(row, row + g);
  scored.rollouts.forEach((rollout, row) => (rollout.advantage = own[row]));
  const stats = groupStats(scored.rollouts.map((r) => r.reward));
  await ctx.emit({ type: 'advantages', step: plan.step, epoch: plan.epoch, item: index, advantages: own, stats, zeroSpread: stats.spread === 0 });
  const result: ItemResult = {
    step: plan.step,
    epoch: plan.epoch,
    index,
    position,
    prompt: scored.prepared.prompt,
    experienceIds: scored.prepared.experienceIds ?? [],
    rollouts: scored.rollouts,
    usage: scored.group.usage,
    stats,
    ...(scored.resamples > 0 ? { resamples: scored.resamples } : {}),
    warnings: [],
  };
  await state.handleGroup?.(ctx, result, scored.rewards);
  return result;
}

/** Advantages of a step whose every group was left out. */
function emptyAdvantages(): AdvantageResult {
  return { advantages: [], rewards: [], groupMeans: [], groupStds: [], fracRewardZeroStd: 0 };
}

/** A step's dynamic-sampling counts: groups sampled again, the extra samplings, groups left out. */
function dynamicStats(items: readonly ItemResult[], kept: number): Pick<StepStats, 'resampledGroups' | 'resamples' | 'droppedGroups'> {
  return {
    resampledGroups: items.filter((item) => (item.resamples ?? 0) > 0).length,
    resamples: items.reduce((n, item) => n + (item.resamples ?? 0), 0),
    droppedGroups: items.length - kept,
  };
}

/**
 * An epoch's end: read back from the store (so an epoch finished after a resume includes its
 * earlier steps), handed to `onEpoch` as export groups, and announced.
 */
async function endEpoch<K extends Kind, H extends LoopHandles, R, P extends Payload<K>, O extends StartOptions<H>, I>(
  method: Method<K, H, R, P, O, I>,
  state: Drive<R, P>,
  inputs: DriveInputs<H>,
  plan: StepPlan,
  emit: Reporter['emit'],
  progress: Progress,
): Promise<void> {
  const { store, runId, handles } = inputs;
  const steps = (await store.listSteps(runId, { from: plan.step - plan.batch + 1, to: plan.step })) as unknown as StepRecord<P>[];
  if (handles.onEpoch) {
    const run = (await store.getRun(runId)) as unknown as RunOf<K>;
    const groupsOf = (result: ItemResult) => method.exportGroups?.(run.config as RunOf<K>['config'], runId, result) ?? [itemResultGroup(runId, result)];
    await handles.onEpoch({ epoch: plan.epoch, groups: steps.flatMap((s) => s.items.flatMap(groupsOf)) });
  }
  const stats = { epoch: plan.epoch, steps: steps.length, ...stepStats(steps.flatMap((s) => s.items)) };
  await emit({ type: 'epoch-end', epoch: plan.epoch, stats, ...state.fields?.({ type: 'epoch-end', epoch: plan.epoch, steps }), progress });
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
