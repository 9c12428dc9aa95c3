/**
 * What every GRPO loop does first with a dataset item: sample a group from the policy, score each
 * completion with every reward function, and turn the rewards into advantages relative to the
 * group, emitting the events a UI draws. The training-free loop then hands the group to its critic;
 * the gradient loop hands it to the trainer. The router loop samples one group in parts (one
 * `sampleGroup` per arm) and scores the reassembled group with `scoreGroup`.
 */
import { InvalidInputError, throwIfAborted, WebgrpoError } from '../errors.js';
import { computeAdvantages, type ScaleRewards } from '../math/advantages.js';
import type { Completion, Policy, PromptInput, Usage } from '../policy/types.js';
import type { DatasetItem, GroupStats, RolloutRecord } from '../store/records.js';
import type { RolloutEvent } from './events.js';
import type { RewardFunction } from '../methods/training-free/options.js';
import { deriveSeed } from './random.js';
import { groupStats } from './stats.js';

export interface RolloutContext {
  policy: Policy;
  rewards: RewardFunction[];
  signal: AbortSignal;
  emit: (event: RolloutEvent) => Promise<void>;
}

/** The sampling and reward settings of a run (both loops' configs have them). */
export interface RolloutSettings {
  groupSize: number;
  maxNewTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  rewards: ReadonlyArray<{ weight: number }>;
}

export interface GroupRollout {
  rollouts: RolloutRecord[];
  usage: Usage;
  stats: GroupStats;
  /** Combined reward per completion, NaN where no function could score it. */
  rewards: number[];
}

/** The item's own prompt: raw text or chat messages, as the dataset gives it. */
export function promptOf(item: DatasetItem): PromptInput {
  return item.prompt !== undefined ? { prompt: item.prompt } : { messages: item.messages };
}

export async function rolloutGroup(
  ctx: RolloutContext,
  config: RolloutSettings,
  ref: { step: number; epoch: number; item: number },
  item: DatasetItem,
  prompt: PromptInput,
  scaleRewards: ScaleRewards = 'group',
): Promise<GroupRollout> {
  const seed = deriveSeed(config.seed, 'rollout', ref.epoch, ref.item);
  const group = await sampleGroup(ctx.policy, prompt, config, { count: config.groupSize, temperature: config.temperature, seed }, ctx.signal);
  return scoreGroup(ctx, config, ref, item, prompt, group, scaleRewards);
}

/** What one `generateGroup` call draws: how many completions, at which temperature, from which seed. */
export interface Draw {
  count: number;
  temperature: number;
  seed: number;
}

/** One `generateGroup` call with a run's other sampling settings, checked to return `draw.count` completions. */
export async function sampleGroup(
  policy: Policy,
  prompt: PromptInput,
  config: RolloutSettings,
  { count, temperature, seed }: Draw,
  signal: AbortSignal,
): Promise<{ completions: Completion[]; usage: Usage }> {
  const group = await policy.generateGroup({
    ...prompt,
    groupSize: count,
    maxNewTokens: config.maxNewTokens,
    temperature,
    topK: config.topK,
    topP: config.topP,
    minP: config.minP,
    seed,
    signal,
  });
  throwIfAborted(signal);
  if (group.completions.length !== count) {
    throw new WebgrpoError('Generation', `The policy returned ${group.completions.length} completions for a group of ${count}.`);
  }
  return { completions: group.completions, usage: group.usage };
}

/**
 * A sampled group's rewards and advantages, with the events a UI draws. `prompt` is what the
 * reward functions see as the item's prompt.
 */
export async function scoreGroup(
  ctx: RolloutContext,
  config: RolloutSettings,
  ref: { step: number; epoch: number; item: number },
  item: DatasetItem,
  prompt: PromptInput,
  group: { completions: Completion[]; usage: Usage },
  scaleRewards: ScaleRewards = 'group',
): Promise<GroupRollout> {
  const { emit } = ctx;
  await emit({ type: 'rollouts', ...ref, completions: group.completions, usage: group.usage });

  const table = await rewardTable(ctx.rewards, group.completions, item, prompt, ref.item);
  const weights = config.rewards.map((r) => r.weight);
  const advantage = computeAdvantages(table, { groupSize: config.groupSize, weights, scaleRewards });
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
  return { rollouts, usage: group.usage, stats, rewards: advantage.rewards };
}

/** Every reward function on every completion of a group: one row of K (finite or null) per completion. */
export async function rewardTable(
  rewards: RewardFunction[],
  completions: Completion[],
  item: DatasetItem,
  prompt: PromptInput,
  index: number,
): Promise<Array<Array<number | null>>> {
  const table: Array<Array<number | null>> = [];
  for (const [row, completion] of completions.entries()) {
    const values: Array<number | null> = [];
    for (const reward of rewards) {
      const value = await reward.score({ text: completion.text, completion, item, prompt, row });
      if (value !== null && (typeof value !== 'number' || !Number.isFinite(value))) {
        throw new InvalidInputError(
          `rewards.${reward.name}`,
          `returned ${String(value)} for item ${index}, completion ${row}; return a finite number, or null when it cannot score.`,
        );
      }
      values.push(value);
    }
    table.push(values);
  }
  return table;
}
