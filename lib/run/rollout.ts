/**
 * What the driver does first with a dataset item: sample a group from the policy (`sampleGroup`,
 * one `generateGroup` call checked to return the group) and score each completion with every
 * reward function (`rewardTable`). The router method samples one group in parts, one
 * `sampleGroup` per arm.
 */
import { InvalidInputError, throwIfAborted, WebgrpoError } from '../errors.js';
import type { Completion, Policy, PromptInput, Usage } from '../core/policy.js';
import type { DatasetItem } from '../core/dataset.js';
import type { RewardFunction } from '../core/reward.js';

/** The sampling and reward settings of a run (every method's config has them). */
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

/** The item's own prompt: raw text or chat messages, as the dataset gives it. */
export function promptOf(item: DatasetItem): PromptInput {
  return item.prompt !== undefined ? { prompt: item.prompt } : { messages: item.messages };
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
