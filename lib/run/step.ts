/**
 * One step of a run, as the driver (driver.ts) runs it for every method, top to bottom:
 *
 *   1. sample and reward every unfinished item of the batch (`sampleItem`, the one sampling site)
 *   2. the step's advantages, computed once over all of its groups (any `scaleRewards`)
 *   3. each scored group to the method, each item stored as it finishes
 *   4. the method ends the step; the step record (common fields + the method's payload) is
 *      committed in one transaction
 *
 * and the epoch's end and due held-out evaluation after its last step. A step of a resumed run
 * reuses the items the store holds and samples the rest again from the same seeds, so its groups,
 * its advantages and everything after them are those of an uninterrupted run.
 */
import { throwIfAborted } from '../errors.js';
import { itemResultGroup } from './groups.js';
import { combinedRewards, computeAdvantages, type AdvantageOptions, type AdvantageResult } from '../math/advantages.js';
import type { AnyRunRecord, ItemResult, RolloutRecord, StepPayloadBase, StepRecord, StepStats } from '../store/records/index.js';
import type { DatasetItem } from '../core/dataset.js';
import { isFlat } from './dynamic-sampling.js';
import type { Store } from '../store/store.js';
import type { RewardFunction } from '../core/reward.js';
import type { Progress } from './events.js';
import { evaluateHeldOut, evaluationDue } from './held-out.js';
import type { AnyMethod, Drive, ItemContext, PreparedItem, Reporter, SampledGroup } from './method.js';
import type { LoopHandles } from './options.js';
import { deriveSeed } from './random.js';
import { promptOf, rewardTable, sampleGroup } from './rollout.js';
import { progressAt, Schedule, type StepPlan } from './schedule.js';
import { groupStats, stepStats } from './stats.js';

/**
 * One step of the run, the four parts of the file's head. Items of a resumed step that the
 * store holds are reused as they are; the others are sampled, rewarded and handed to the method.
 */
export async function runStep(loop: Loop, step: number): Promise<void> {
  const plan = loop.schedule.plan(step);
  await loop.report.emit({ type: 'step-start', step, epoch: plan.epoch, batch: plan.batch, items: plan.indices, ...loop.state.fields?.({ type: 'step-start', plan }), progress: progress(loop, step) });
  const finished = new Map((await loop.inputs.store.getItemResults(loop.inputs.runId, step)).map((r) => [r.position, r]));
  const batch = stepBatch(loop, plan);

  // 1. Sample and reward the unfinished items; a resumed step's finished ones come from the store.
  const scored = await scoreItems(loop, batch, finished);
  // 2. The step's advantages, once, over its groups in batch order (dynamic sampling leaves flat groups out).
  const groups = stepAdvantages(loop, finished, scored);
  // 3. Each group to the method; each item stored as it finishes, so a resume never redoes it.
  const results = await finishItems(loop, batch, finished, scored, groups);
  // 4. The method ends the step (on the groups the advantages cover); the record is committed in one transaction.
  await commitStep(loop, plan, results, groups);
  if (plan.lastOfEpoch) {
    await endEpoch(loop, plan);
    await evaluateAfter(loop, plan.epoch, []);
  }
}

/** A drive in progress: the stored run, the method's state for this drive, and where the run stands. */
export interface Loop<R = unknown> {
  method: AnyMethod<LoopHandles, R>;
  state: Drive<R, AnyPayload>;
  inputs: DriveInputs;
  run: AnyRunRecord;
  items: DatasetItem[];
  schedule: Schedule;
  signal: AbortSignal;
  /** Events and warnings, counted in `done.warnings`. */
  report: Reporter;
  /** Steps committed, items finished (each epoch counts every item again), warnings so far. */
  done: { steps: number; items: number; warnings: number };
  advantages: AdvantageOptions;
}

/** The store, the run and what every drive of it needs besides its stored config. */
export interface DriveInputs {
  store: Store;
  runId: string;
  handles: LoopHandles;
  /** In the order of the run's reward columns (a resume's matched to them by name). */
  rewards: RewardFunction[];
  resumed: boolean;
}

/** A method's step payload, as the driver holds it: an object of the method's kind. */
type AnyPayload = StepPayloadBase & { kind: string };

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

/** The step's items as the hooks see them, and the abort that stops them all on the first failure. */
interface StepBatch {
  contexts: ItemContext[];
  abort: AbortController;
}

/** The step's advantages and the groups they cover (their positions in the batch, and each one's first row). */
interface StepGroups {
  kept: number[];
  advantages: AdvantageResult;
  rowOf: Map<number, number>;
}

/** One context per item of the step, each on a signal that the step's first failure aborts. */
function stepBatch(loop: Loop, plan: StepPlan): StepBatch {
  const abort = new AbortController();
  const signal = AbortSignal.any([loop.signal, abort.signal]);
  const { policy } = loop.inputs.handles;
  return { abort, contexts: plan.indices.map((index, position) => ({ ...loop.report, plan, position, index, item: loop.items[index], signal, policy })) };
}

/** Step 1 over the batch: every unfinished item scored (up to the method's concurrency at once). */
async function scoreItems(loop: Loop, { contexts, abort }: StepBatch, finished: ReadonlyMap<number, ItemResult>): Promise<Array<Scored | undefined>> {
  const scored = new Array<Scored | undefined>(contexts.length);
  await eachConcurrently(contexts.length, loop.state.concurrency ?? 1, abort, async (position) => {
    if (finished.has(position)) return;
    const item = await scoreItem(loop, contexts[position]);
    throwIfAborted(contexts[position].signal);
    item.group.rewarded?.(item.rollouts);
    scored[position] = item;
  });
  throwIfAborted(loop.signal);
  return scored;
}

/**
 * Step 1 for one item: its prompt, its group, every reward function on every completion; with
 * dynamic sampling, a flat group sampled again (up to the bound) and the last sampling kept.
 */
async function scoreItem(loop: Loop, ctx: ItemContext): Promise<Scored> {
  const ref = { step: ctx.plan.step, epoch: ctx.plan.epoch, item: ctx.index };
  const prepared = loop.state.prepare ? await loop.state.prepare(ctx) : { prompt: promptOf(ctx.item) };
  await ctx.emit({ type: 'item-start', ...ref, position: ctx.position, prompt: prepared.prompt, ...prepared.start });
  const dynamic = loop.run.config.dynamicSampling;
  const usage = { promptTokens: 0, completionTokens: 0 };
  for (let attempt = 0; ; attempt++) {
    const group = await sampleItem(loop, ctx, prepared, attempt);
    usage.promptTokens += group.usage.promptTokens;
    usage.completionTokens += group.usage.completionTokens;
    const again = attempt > 0 ? { resample: attempt } : {};
    await ctx.emit({ type: 'rollouts', ...ref, ...again, completions: group.completions, usage: group.usage });
    const table = await rewardTable(loop.inputs.rewards, group.completions, ctx.item, prepared.prompt, ctx.index);
    const rewards = combinedRewards(table, loop.advantages.weights);
    await ctx.emit({ type: 'rewards', ...ref, ...again, rewards: table, combined: nullable(rewards) });
    if (!dynamic || attempt >= dynamic.maxResamples || !isFlat(rewards)) {
      return { prepared, group: attempt > 0 ? { ...group, usage } : group, table, rewards, rollouts: rolloutRecords(group, table, rewards), resamples: attempt };
    }
    throwIfAborted(ctx.signal);
  }
}

/**
 * The one place a group is sampled: the method's own way, or one `generateGroup` of G. A
 * resampling (`attempt` above 0, dynamic sampling) draws from seeds of its own.
 */
function sampleItem(loop: Loop, ctx: ItemContext, prepared: PreparedItem, attempt: number): Promise<SampledGroup> {
  if (loop.state.sample) return loop.state.sample(ctx, prepared);
  const { config } = loop.run;
  const seed = attempt === 0 ? deriveSeed(config.seed, 'rollout', ctx.plan.epoch, ctx.index) : deriveSeed(config.seed, 'resample', ctx.plan.epoch, ctx.index, attempt);
  return sampleGroup(ctx.policy, prepared.prompt, config, { count: config.groupSize, temperature: config.temperature, seed }, ctx.signal);
}

/** A group's rollouts as stored, their advantages still to come. */
function rolloutRecords(group: SampledGroup, table: Array<Array<number | null>>, rewards: number[]): RolloutRecord[] {
  const combined = nullable(rewards);
  return group.completions.map((c, row) => ({
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
}

/**
 * Step 2: the advantages over the step's groups in batch order; with dynamic sampling, over the
 * groups whose rewards differ (the flat ones are left out of the update).
 */
function stepAdvantages(loop: Loop, finished: ReadonlyMap<number, ItemResult>, scored: ReadonlyArray<Scored | undefined>): StepGroups {
  const rewardsOf = (position: number) => finished.get(position)?.rollouts.map((r) => r.reward) ?? scored[position]!.rewards;
  const { config } = loop.run;
  const kept = Array.from(scored, (_, position) => position).filter((position) => !config.dynamicSampling || !isFlat(rewardsOf(position)));
  const table = kept.flatMap((position) => finished.get(position)?.rollouts.map((r) => r.rewards) ?? scored[position]!.table);
  const advantages = kept.length > 0 ? computeAdvantages(table, loop.advantages) : emptyAdvantages();
  return { kept, advantages, rowOf: new Map(kept.map((position, k) => [position, k * config.groupSize])) };
}

/** Step 3 over the batch: each item finished (or reused as the store holds it), stored and announced. */
async function finishItems(loop: Loop, { contexts, abort }: StepBatch, finished: ReadonlyMap<number, ItemResult>, scored: ReadonlyArray<Scored | undefined>, groups: StepGroups): Promise<ItemResult[]> {
  const results = new Array<ItemResult>(contexts.length);
  await eachConcurrently(contexts.length, loop.state.concurrency ?? 1, abort, async (position) => {
    const ctx = contexts[position];
    const reused = finished.get(position);
    const result = reused ?? (await finishItem(loop.state, ctx, scored[position]!, groups.advantages, groups.rowOf.get(position)));
    throwIfAborted(ctx.signal);
    if (reused) loop.done.warnings += reused.warnings.length;
    else await loop.inputs.store.putItemResult(loop.inputs.runId, result);
    results[position] = result;
    loop.done.items += 1;
    await ctx.emit({ type: 'item-end', step: ctx.plan.step, epoch: ctx.plan.epoch, item: ctx.index, result, reused: reused !== undefined, progress: progress(loop, ctx.plan.step) });
  });
  throwIfAborted(loop.signal);
  return results;
}

/**
 * Step 3 for one item: its rollouts' advantages (the step's, from `row`; zeros for a group left
 * out of the update), its result, the method's work on it.
 */
async function finishItem(state: Drive<unknown, AnyPayload>, ctx: ItemContext, scored: Scored, advantages: AdvantageResult, row: number | undefined): Promise<ItemResult> {
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

/** Step 4: the method's end of the step, the step record committed with its extras, and announced. */
async function commitStep(loop: Loop, plan: StepPlan, results: ItemResult[], { kept, advantages }: StepGroups): Promise<void> {
  const { report, signal } = loop;
  const outcome = await loop.state.finishStep({ ...report, plan, signal }, kept.map((position) => results[position]), advantages);
  throwIfAborted(signal);
  const record: StepRecord<AnyPayload> = {
    step: plan.step,
    epoch: plan.epoch,
    batch: plan.batch,
    items: results,
    stats: { ...stepStats(results), ...(loop.run.config.dynamicSampling ? dynamicStats(results, kept.length) : {}) },
    warnings: outcome.warnings ?? [],
    committedAt: new Date().toISOString(),
    payload: { ...outcome.payload, kind: loop.method.kind },
  };
  await loop.inputs.store.commitStep(loop.inputs.runId, record, outcome.extras);
  loop.done.steps = plan.step;
  for (const event of outcome.committed?.() ?? []) await report.emit(event);
  await report.emit({ type: 'step-end', step: plan.step, epoch: plan.epoch, batch: plan.batch, stats: record.stats, ...outcome.end, progress: progress(loop, plan.step) });
}

/**
 * An epoch's end: read back from the store (so an epoch finished after a resume includes its
 * earlier steps), handed to `onEpoch` as export groups, and announced.
 */
async function endEpoch(loop: Loop, plan: StepPlan): Promise<void> {
  const { store, runId, handles } = loop.inputs;
  const steps = await store.listSteps(runId, { from: plan.step - plan.batch + 1, to: plan.step });
  if (handles.onEpoch) {
    const { config } = (await store.getRun(runId))!;
    const groupsOf = (result: ItemResult) => loop.method.exportGroups?.(config, runId, result) ?? [itemResultGroup(runId, result)];
    await handles.onEpoch({ epoch: plan.epoch, groups: steps.flatMap((s) => s.items.flatMap(groupsOf)) });
  }
  const stats = { epoch: plan.epoch, steps: steps.length, ...stepStats(steps.flatMap((s) => s.items)) };
  await loop.report.emit({ type: 'epoch-end', epoch: plan.epoch, stats, ...loop.state.fields?.({ type: 'epoch-end', epoch: plan.epoch, steps }), progress: progress(loop, plan.step) });
}

/** The held-out evaluation after `epoch` when it is due and not `kept` yet, kept with the run and announced. */
export async function evaluateAfter(loop: Loop, epoch: number, kept: ReadonlyArray<{ epoch: number }>): Promise<void> {
  const { signal, inputs } = loop;
  const { config } = loop.run;
  const { evaluation } = config;
  if (!evaluation || !evaluationDue(evaluation, epoch, loop.schedule.epochs) || kept.some((e) => e.epoch === epoch)) return;
  const { policy = inputs.handles.policy, prompt, temperature } = loop.state.heldOut ?? {};
  const held = { policy, rewards: inputs.rewards, config: { ...config, evaluation }, ...(prompt ? { prompt } : {}), ...(temperature ? { temperature } : {}), signal };
  const record = await evaluateHeldOut(held, epoch, loop.done.steps);
  throwIfAborted(signal);
  await inputs.store.putEvaluation(inputs.runId, record);
  // Where the run stands: the step just finished, or before any, the first one (as run-start says).
  await loop.report.emit({ type: 'eval', epoch, step: loop.done.steps, evaluation: record, progress: progress(loop, Math.max(1, loop.done.steps)) });
}

/** Where the run stands at `step`, as every event reports it. */
export function progress(loop: Loop, step: number): Progress {
  return progressAt(loop.schedule, step, loop.done.items);
}

/** NaN (a row no reward function could score) as null, as events and records keep it. */
function nullable(rewards: number[]): Array<number | null> {
  return rewards.map((r) => (Number.isNaN(r) ? null : r));
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
