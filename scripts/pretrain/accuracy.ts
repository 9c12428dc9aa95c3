/**
 * Held-out exact-match accuracy of a policy on the skill tasks: each problem's replies are sampled
 * (greedy: one reply at temperature 0) and scored by the task's `exact` reward. What the model card
 * reports, the card's test re-measures and the skill benchmark compares before and after GRPO.
 */
import type { Policy } from '../../lib/core/policy.js';
import type { SkillTask } from '../../lib/tasks/split.js';

export interface AccuracyOptions {
  /** Problems per task. */
  size: number;
  /** Seed of the held-out problems. */
  seed: number;
  /** 0: greedy, one reply per problem. */
  temperature: number;
  /** Replies per problem when sampling. */
  samples: number;
  /** Seed of the sampler. */
  samplerSeed?: number;
}

export interface TaskAccuracy {
  task: string;
  /** Share of replies that are exactly right. */
  exact: number;
  replies: number;
  /** The first reply to each of the first three problems, for the card. */
  examples: Array<{ prompt: string; reply: string; answer: string }>;
}

export const MAX_REPLY_TOKENS = 24;

export async function skillAccuracy(policy: Policy, tasks: readonly SkillTask[], options: AccuracyOptions): Promise<TaskAccuracy[]> {
  const out: TaskAccuracy[] = [];
  for (const task of tasks) {
    const exact = task.rewards.find((r) => r.name === 'exact')!;
    const items = task.dataset({ size: options.size, seed: options.seed });
    let right = 0;
    let replies = 0;
    const examples: TaskAccuracy['examples'] = [];
    for (const [i, item] of items.entries()) {
      const greedy = options.temperature === 0;
      const group = await policy.generateGroup({
        messages: item.messages,
        groupSize: greedy ? 1 : options.samples,
        maxNewTokens: MAX_REPLY_TOKENS,
        temperature: options.temperature,
        seed: (options.samplerSeed ?? 0) + i,
      });
      for (const [row, completion] of group.completions.entries()) {
        const score = await exact.score({ text: completion.text, completion, item, prompt: { messages: item.messages }, row });
        right += score === 1 ? 1 : 0;
        replies++;
        if (row === 0 && examples.length < 3) examples.push({ prompt: item.messages![0].content as string, reply: completion.text, answer: item.answer as string });
      }
    }
    out.push({ task: task.name, exact: right / replies, replies, examples });
  }
  return out;
}

/** Mean over tasks (each task weighs the same). */
export function meanAccuracy(results: readonly TaskAccuracy[]): number {
  return results.reduce((s, r) => s + r.exact, 0) / results.length;
}
