/**
 * GRPO on the bundled skill model, with either adapter, on the skill tasks' training split: the
 * product's gradient method (`gradientGrpo`, the driver's loop) on the tasks' problems in turn,
 *
 * - full-depth LoRA (`adapter: 'lora'`, rank 8 on all seven projections of every layer, the CPU
 *   onnxruntime training graphs, no KL or entropy bonus): after every update the policy samples
 *   with the adapter's A and B as graph inputs;
 * - the head adapter (rank 8 on the LM head), whose policy samples the adapted logits.
 *
 * The reward of a reply is its task's rewards, weighted (exact 1, partial credit 0.5). Before and
 * after, held-out accuracy is measured with skillAccuracy (scripts/pretrain/accuracy.ts).
 */
import { fileURLToPath } from 'node:url';
import { gradientGrpo } from '../../lib/grad.js';
import type { DatasetItem, RewardFunction } from '../../lib/index.js';
import { skillTasks, type SkillTask } from '../../lib/tasks.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { RewardContext } from '../../lib/core/reward.js';
import { MAX_REPLY_TOKENS, skillAccuracy, type AccuracyOptions, type TaskAccuracy } from '../pretrain/accuracy.js';

export const SKILL_DIR = fileURLToPath(new URL('../../public/models/webgrpo-skill', import.meta.url));

export interface SkillGrpoOptions {
  adapter: 'lora' | 'head';
  /** Model folder; default the bundled skill model. */
  model?: string;
  seed: number;
  steps: number;
  /** Prompts per step (the tasks in turn). */
  batch: number;
  group: number;
  lr: number;
  tasks?: readonly SkillTask[];
  /** Held-out measurement, greedy and at temperature 1. */
  eval: Omit<AccuracyOptions, 'temperature'>;
}

export interface SkillGrpoResult {
  before: { greedy: TaskAccuracy[]; sampled: TaskAccuracy[] };
  after: { greedy: TaskAccuracy[]; sampled: TaskAccuracy[] };
  /** Mean training reward of each step. */
  rewards: number[];
  seconds: number;
}

/** The weighted sum of the task's rewards for a reply (rewards here are synchronous). */
function rewardOf(task: SkillTask, text: string, item: DatasetItem): number {
  return task.rewards.reduce((sum, r) => sum + (r.weight ?? 1) * ((r.score({ text, item } as RewardContext) as number | null) ?? 0), 0);
}

/** The training prompts: the tasks in turn, from their training split, each marked with its task. */
function trainingItems(tasks: readonly SkillTask[], count: number, seed: number): DatasetItem[] {
  const per = tasks.map((task, t) => task.dataset({ size: Math.ceil(count / tasks.length), seed: seed * 31 + t, split: 'train' }));
  return Array.from({ length: count }, (_, i) => {
    const item = per[i % tasks.length][Math.floor(i / tasks.length)];
    return { ...item, meta: { ...item.meta, task: tasks[i % tasks.length].name } };
  });
}

async function measure(policy: OnnxPolicy, tasks: readonly SkillTask[], eval_: SkillGrpoOptions['eval']) {
  return { greedy: await skillAccuracy(policy, tasks, { ...eval_, temperature: 0, samples: 1 }), sampled: await skillAccuracy(policy, tasks, { ...eval_, temperature: 1 }) };
}

export async function skillGrpo(o: SkillGrpoOptions): Promise<SkillGrpoResult> {
  const tasks = o.tasks ?? skillTasks;
  const started = performance.now();
  const byName = new Map(tasks.map((task) => [task.name, task]));
  // One reward: the reply's own task's rewards, weighted.
  const reward: RewardFunction = { name: 'task', score: ({ text, item }) => rewardOf(byName.get(item.meta!.task as string)!, text, item) };
  const options = { dataset: trainingItems(tasks, o.steps * o.batch, o.seed), rewards: [reward], groupSize: o.group, batchSize: o.batch, epochs: 1, maxNewTokens: MAX_REPLY_TOKENS, temperature: 1, seed: o.seed, shuffle: false, optimizer: { lr: o.lr } };
  const policy = await loadOnnxPolicy({ model: o.model ?? SKILL_DIR, hiddenState: o.adapter === 'head' });
  try {
    const before = await measure(policy, tasks, o.eval);
    const run = o.adapter === 'head' ? gradientGrpo({ policy, ...options }) : gradientGrpo({ adapter: 'lora', policy, ...options, lora: { r: 8, alpha: 16 }, loss: { beta: 0, entropyCoeff: 0 } });
    const rewards: number[] = [];
    for await (const event of run as AsyncIterable<{ type: string; stats?: { meanReward: number | null } }>) if (event.type === 'step-end') rewards.push(event.stats!.meanReward ?? 0);
    const { trainer } = await run.result();
    // The policy samples from the trained adapter (the head's logits, or LoRA's A and B as graph inputs).
    const after = await measure(policy, tasks, o.eval);
    trainer.dispose();
    return { before, after, rewards, seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
  }
}
