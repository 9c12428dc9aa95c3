/**
 * One dataset item through one router step: the router picks an arm for every completion of the
 * group (per the item's query class), the completions of each arm are sampled together (the
 * arm's instruction appended, the run's temperature scaled), the group is put back in routed
 * order and scored as one group (the rewards see the item's own prompt), and each rollout records
 * its arm.
 */
import { promptText } from '../../experience/render.js';
import type { Completion, Policy, PromptInput } from '../../policy/types.js';
import type { DatasetItem, ItemResult, RouterConfig } from '../../store/records.js';
import type { RewardFunction } from '../training-free/options.js';
import { deriveSeed } from '../../run/random.js';
import { promptOf, sampleGroup, scoreGroup } from '../../run/rollout.js';
import type { StepPlan } from '../../run/schedule.js';
import { armPrompt } from '../../route/arm.js';
import type { RouterEvent } from './events.js';
import { deriveQueryClass } from '../../route/query-class.js';
import type { GrpoRouter } from '../../route/router.js';

export interface RouterItemContext {
  policy: Policy;
  config: RouterConfig;
  rewards: RewardFunction[];
  signal: AbortSignal;
  emit: (event: RouterEvent) => Promise<void>;
  router: GrpoRouter;
  /** Restarts the router's random stream, so each item's choices depend only on the seed and the item. */
  reseed(seed: number): void;
}

/** The class the router learns an item under. */
export function queryClassOf(prompt: PromptInput): string {
  return deriveQueryClass(promptText(prompt));
}

export async function routeItem(ctx: RouterItemContext, plan: StepPlan, position: number, index: number, item: DatasetItem): Promise<ItemResult> {
  const { config, emit, router } = ctx;
  const ref = { step: plan.step, epoch: plan.epoch, item: index };
  const prompt = promptOf(item);
  await emit({ type: 'item-start', ...ref, position, prompt });

  const queryClass = queryClassOf(prompt);
  const ids = config.arms.map((a) => a.id);
  ctx.reseed(deriveSeed(config.seed, 'route', plan.epoch, index));
  const routed = Array.from({ length: config.groupSize }, () => router.route({ queryClass }, ids));
  await emit({ type: 'routed', ...ref, queryClass, arms: routed });

  // One generateGroup call per arm that got rows; the rows go back to their routed places.
  const completions = new Array<Completion>(config.groupSize);
  const usage = { promptTokens: 0, completionTokens: 0 };
  for (const arm of config.arms) {
    const rows = routed.flatMap((id, row) => (id === arm.id ? [row] : []));
    if (rows.length === 0) continue;
    const draw = { count: rows.length, temperature: config.temperature * (arm.temperatureScale ?? 1), seed: deriveSeed(config.seed, 'rollout', plan.epoch, index, arm.id) };
    const group = await sampleGroup(ctx.policy, armPrompt(prompt, arm), config, draw, ctx.signal);
    rows.forEach((row, i) => (completions[row] = group.completions[i]));
    usage.promptTokens += group.usage.promptTokens;
    usage.completionTokens += group.usage.completionTokens;
  }

  const { rollouts, stats } = await scoreGroup(ctx, config, ref, item, prompt, { completions, usage });
  rollouts.forEach((rollout, row) => (rollout.arm = routed[row]));
  return { step: plan.step, epoch: plan.epoch, index, position, prompt, experienceIds: [], rollouts, usage, stats, warnings: [] };
}

/** Hands the router every scorable completion of a finished item (its reward under the item's class and its arm). */
export function observe(router: GrpoRouter, result: ItemResult): void {
  const queryClass = queryClassOf(result.prompt);
  for (const rollout of result.rollouts) {
    if (rollout.reward !== null && rollout.arm !== undefined) router.addSample(queryClass, rollout.arm, rollout.reward);
  }
}
