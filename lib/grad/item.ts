/**
 * One dataset item through one gradient step: a group sampled from the adapted policy, its rewards
 * and group-relative advantages, as the `ItemResult` every store keeps (the same record the
 * training-free loop writes, without experiences or critic).
 */
import { throwIfAborted, WebgrpoError } from '../errors.js';
import { computeAdvantages } from '../math/advantages.js';
import type { Policy, PromptInput } from '../policy/types.js';
import type { DatasetItem, GradientConfig, ItemResult, RolloutRecord } from '../store/records.js';
import { rewardTable } from '../train/item.js';
import type { RewardFunction } from '../train/options.js';
import { deriveSeed } from '../train/random.js';
import type { StepPlan } from '../train/schedule.js';
import { groupStats } from '../train/stats.js';
import type { GradientEvent } from './events.js';

export interface GradientItemContext {
  policy: Policy;
  config: GradientConfig;
  rewards: RewardFunction[];
  signal: AbortSignal;
  emit: (event: GradientEvent) => Promise<void>;
}

export function promptOf(item: DatasetItem): PromptInput {
  return item.prompt !== undefined ? { prompt: item.prompt } : { messages: item.messages };
}

export async function rolloutItem(ctx: GradientItemContext, plan: StepPlan, position: number, index: number, item: DatasetItem): Promise<ItemResult> {
  const { config, policy, signal, emit } = ctx;
  const ref = { step: plan.step, epoch: plan.epoch, item: index };
  const prompt = promptOf(item);
  await emit({ type: 'item-start', ...ref, position, prompt });

  const group = await policy.generateGroup({
    ...prompt,
    groupSize: config.groupSize,
    maxNewTokens: config.maxNewTokens,
    temperature: config.temperature,
    topK: config.topK,
    topP: config.topP,
    minP: config.minP,
    seed: deriveSeed(config.seed, 'rollout', plan.epoch, index),
    signal,
  });
  throwIfAborted(signal);
  if (group.completions.length !== config.groupSize) {
    throw new WebgrpoError('Generation', `The policy returned ${group.completions.length} completions for a group of ${config.groupSize}.`);
  }
  await emit({ type: 'rollouts', ...ref, completions: group.completions, usage: group.usage });

  const table = await rewardTable(ctx.rewards, group.completions, item, prompt, index);
  const weights = config.rewards.map((r) => r.weight);
  // The group's own view; with 'batch' scaling the trainer rescales over all of the step's groups.
  const advantage = computeAdvantages(table, { groupSize: config.groupSize, weights, scaleRewards: config.loss.scaleRewards === 'batch' ? 'group' : config.loss.scaleRewards });
  const combined = advantage.rewards.map((r) => (Number.isNaN(r) ? null : r));
  await emit({ type: 'rewards', ...ref, rewards: table, combined });
  const stats = groupStats(combined);
  await emit({ type: 'advantages', ...ref, advantages: advantage.advantages, stats, zeroSpread: stats.spread === 0 });

  const rollouts: RolloutRecord[] = group.completions.map((c, row) => ({
    text: c.text,
    tokenIds: [...c.tokenIds],
    logprobs: [...c.logprobs],
    finishReason: c.finishReason,
    rewards: table[row],
    reward: combined[row],
    advantage: advantage.advantages[row],
  }));
  return { step: plan.step, epoch: plan.epoch, index, position, prompt, experienceIds: [], rollouts, usage: group.usage, stats, warnings: [] };
}
