/**
 * How much a task leaves GRPO to teach a policy: on held-out problems, the greedy reply's exact
 * match (pass@1 greedy), the share of right replies at T=1, and pass@k at T=1 (problems with at
 * least one right reply among k). A task where pass@k is well above greedy pass@1 has right
 * answers in the model's samples for a gradient to make likelier; and the share of the most
 * common answer is what a constant reply scores there.
 */
import type { Policy } from '../../lib/core/policy.js';
import type { RewardContext } from '../../lib/core/reward.js';
import type { SkillTask } from '../../lib/tasks.js';
import { MAX_REPLY_TOKENS } from '../pretrain/accuracy.js';

export interface PassAt {
  task: string;
  problems: number;
  greedy: number;
  /** Share of right replies at T=1. */
  sampled: number;
  /** Problems with at least one right reply among `k` at T=1. */
  passAtK: number;
  k: number;
  /** The most common answer's share of the problems: what a constant reply scores. */
  constant: number;
  distinctAnswers: number;
}

export async function passAt(policy: Policy, task: SkillTask, o: { size: number; seed: number; k: number; samplerSeed: number }): Promise<PassAt> {
  const exact = task.rewards.find((r) => r.name === 'exact')!;
  const items = task.dataset({ size: o.size, seed: o.seed });
  const right = (text: string, item: (typeof items)[number]) => exact.score({ text, item } as RewardContext) === 1;
  let greedy = 0;
  let sampled = 0;
  let any = 0;
  for (const [i, item] of items.entries()) {
    const one = await policy.generateGroup({ messages: item.messages, groupSize: 1, maxNewTokens: MAX_REPLY_TOKENS, temperature: 0, seed: o.samplerSeed + i });
    const group = await policy.generateGroup({ messages: item.messages, groupSize: o.k, maxNewTokens: MAX_REPLY_TOKENS, temperature: 1, seed: o.samplerSeed + i });
    const hits = group.completions.filter((c) => right(c.text, item)).length;
    greedy += right(one.completions[0].text, item) ? 1 : 0;
    sampled += hits / o.k;
    any += hits > 0 ? 1 : 0;
  }
  const answers = items.map((item) => String(item.answer));
  const most = Math.max(...answers.map((a) => answers.filter((b) => b === a).length));
  const n = items.length;
  return { task: task.name, problems: n, greedy: greedy / n, sampled: sampled / n, passAtK: any / n, k: o.k, constant: most / n, distinctAnswers: new Set(answers).size };
}
