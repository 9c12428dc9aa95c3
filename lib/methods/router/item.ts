/**
 * One dataset item of a router step: the router picks an arm for every completion of the group
 * (per the item's query class), the completions of each arm are sampled together (the arm's
 * instruction appended, the run's temperature scaled), and the group is put back in routed order;
 * the driver scores it as one group (the rewards see the item's own prompt), and each rollout
 * records its arm; the rewarded group is handed to `rewarded` (the router counts its samples).
 */
import { promptText } from '../../experience/render.js';
import type { Completion, PromptInput } from '../../core/policy.js';
import type { ItemResult } from '../../store/records/index.js';
import type { RouterArm } from './arm.js';
import type { RouterConfig } from './record.js';
import type { ItemContext, PreparedItem, SampledGroup } from '../../run/method.js';
import { deriveSeed } from '../../run/random.js';
import { sampleGroup } from '../../run/rollout.js';
import { armPrompt } from './arm.js';
import { deriveQueryClass } from './query-class.js';
import type { GrpoRouter } from './router.js';

/** The class the router learns an item under. */
export function queryClassOf(prompt: PromptInput): string {
  return deriveQueryClass(promptText(prompt));
}

/**
 * The group of an item, routed: `reseed` restarts the router's random stream, so each item's
 * choices depend only on the seed and the item.
 */
export async function routeItem(
  config: RouterConfig,
  router: GrpoRouter,
  reseed: (seed: number) => void,
  ctx: ItemContext,
  prepared: PreparedItem,
  rewarded: (result: Pick<ItemResult, 'prompt' | 'rollouts'>) => void,
): Promise<SampledGroup> {
  const { plan, index } = ctx;
  const { prompt } = prepared;
  const queryClass = queryClassOf(prompt);
  const ids = config.arms.map((a) => a.id);
  reseed(deriveSeed(config.seed, 'route', plan.epoch, index));
  const routed = Array.from({ length: config.groupSize }, () => router.route({ queryClass }, ids));
  await ctx.emit({ type: 'routed', step: plan.step, epoch: plan.epoch, item: index, queryClass, arms: routed });

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
  return {
    completions,
    usage,
    rewarded(rollouts) {
      rollouts.forEach((rollout, row) => (rollout.arm = routed[row]));
      rewarded({ prompt, rollouts });
    },
  };
}

/**
 * The arm the router picks for a query class when it serves (the held-out evaluation): the one it
 * gives the highest probability, the first of them on a tie (so before any update, the first arm).
 */
export function servedArm(config: RouterConfig, router: GrpoRouter, queryClass: string): RouterArm {
  const probabilities = router.probabilities(queryClass, config.arms.map((a) => a.id));
  let best = 0;
  probabilities.forEach((p, i) => (best = p > probabilities[best] ? i : best));
  return config.arms[best];
}

/** Hands the router every scorable completion of an item (its reward under the item's class and its arm). */
export function observe(router: GrpoRouter, result: Pick<ItemResult, 'prompt' | 'rollouts'>): void {
  const queryClass = queryClassOf(result.prompt);
  for (const rollout of result.rollouts) {
    if (rollout.reward !== null && rollout.arm !== undefined) router.addSample(queryClass, rollout.arm, rollout.reward);
  }
}
