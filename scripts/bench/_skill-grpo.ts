/**
 * GRPO on the bundled skill model, with either adapter, on the skill tasks' training split:
 *
 * - full-depth LoRA (GrpoTrainer over the LoRA engine, rank 8 on all seven projections of every layer): each step
 *   samples its groups from the adapted model (merged into the ONNX file, loaded as a fresh policy);
 * - the head adapter (GrpoTrainer over the head adapter's engine), whose policy samples the adapted logits.
 *
 * The reward of a reply is its task's rewards, weighted (exact 1, partial credit 0.5). Before and
 * after, held-out accuracy is measured with skillAccuracy (scripts/pretrain/accuracy.ts).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GrpoTrainer, groupRolloutBatch, headEngine, loraEngine } from '../../lib/grad.js';
import type { DatasetItem } from '../../lib/index.js';
import { skillTasks, type SkillTask } from '../../lib/tasks.js';
import { GrpoConfig } from '../../lib/math.js';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import { readDecoderWeights } from '../../lib/lora/onnx-weights.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { GroupResult } from '../../lib/core/policy.js';
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

/** The training prompts: the tasks in turn, from their training split. */
function trainingItems(tasks: readonly SkillTask[], count: number, seed: number): Array<{ task: SkillTask; item: DatasetItem }> {
  const per = tasks.map((task, t) => task.dataset({ size: Math.ceil(count / tasks.length), seed: seed * 31 + t, split: 'train' }));
  return Array.from({ length: count }, (_, i) => ({ task: tasks[i % tasks.length], item: per[i % tasks.length][Math.floor(i / tasks.length)] }));
}

async function measure(policy: OnnxPolicy, tasks: readonly SkillTask[], eval_: SkillGrpoOptions['eval']) {
  return { greedy: await skillAccuracy(policy, tasks, { ...eval_, temperature: 0, samples: 1 }), sampled: await skillAccuracy(policy, tasks, { ...eval_, temperature: 1 }) };
}

async function sample(policy: OnnxPolicy, batch: Array<{ item: DatasetItem }>, group: number, seed: number): Promise<GroupResult[]> {
  const out: GroupResult[] = [];
  for (const [i, { item }] of batch.entries()) {
    out.push(await policy.generateGroup({ messages: item.messages, groupSize: group, maxNewTokens: MAX_REPLY_TOKENS, temperature: 1, seed: seed + i }));
  }
  return out;
}

export async function skillGrpo(o: SkillGrpoOptions): Promise<SkillGrpoResult> {
  const tasks = o.tasks ?? skillTasks;
  const model = o.model ?? SKILL_DIR;
  const started = performance.now();
  const items = trainingItems(tasks, o.steps * o.batch, o.seed);
  const rewards: number[] = [];
  const dirs: string[] = [];
  if (o.adapter === 'head') {
    const policy = await loadOnnxPolicy({ model: model, hiddenState: true });
    const trainer = new GrpoTrainer(headEngine(policy, { adapter: { seed: o.seed } }), { lr: o.lr }, new GrpoConfig({ numGenerations: o.group }), { temperature: 1 });
    try {
      const before = await measure(policy, tasks, o.eval);
      for (let step = 0; step < o.steps; step++) {
        const batch = items.slice(step * o.batch, (step + 1) * o.batch);
        const groups = await sample(policy, batch, o.group, o.seed * 100_003 + step * 101);
        const scores = groups.map((g, i) => g.completions.map((c) => rewardOf(batch[i].task, c.text, batch[i].item)));
        rewards.push(scores.flat().reduce((s, x) => s + x, 0) / scores.flat().length);
        await trainer.trainStep(groupRolloutBatch(groups.map((g, i) => ({ completions: g.completions, rewards: scores[i] }))), batch.map(({ item }) => ({ messages: item.messages })));
      }
      return { before, after: await measure(policy, tasks, o.eval), rewards, seconds: (performance.now() - started) / 1000 };
    } finally {
      trainer.dispose();
      await policy.dispose();
    }
  }
  const bytes = new Uint8Array(await readFile(join(model, 'onnx/model.onnx')));
  const weights = await readDecoderWeights(bytes, { config: JSON.parse(await readFile(join(model, 'config.json'), 'utf8')) as Record<string, unknown> });
  const adapter = createLoraAdapter(weights.shape, { r: 8, alpha: 16, seed: o.seed });
  let policy = await loadOnnxPolicy({ model: model });
  // The loss of grpoLoss's defaults (no KL, no entropy bonus); prompts encode as the current sampler's.
  const engine = loraEngine({ weights, adapter, promptIds: (input) => policy.promptIds(input) });
  const trainer = new GrpoTrainer(engine, { lr: o.lr }, new GrpoConfig({ numGenerations: o.group, beta: 0, entropyCoeff: 0 }), { temperature: 1 });
  try {
    const before = await measure(policy, tasks, o.eval);
    for (let step = 0; step < o.steps; step++) {
      const batch = items.slice(step * o.batch, (step + 1) * o.batch);
      const groups = await sample(policy, batch, o.group, o.seed * 100_003 + step * 101);
      const scores = groups.map((g, i) => g.completions.map((c) => rewardOf(batch[i].task, c.text, batch[i].item)));
      rewards.push(scores.flat().reduce((s, x) => s + x, 0) / scores.flat().length);
      await trainer.trainStep(groupRolloutBatch(groups.map((g, i) => ({ completions: g.completions, rewards: scores[i] }))), batch.map(({ item }) => ({ messages: item.messages })));
      // Sampling follows the adapter: the next groups come from W + s A^T B^T.
      const dir = await mkdtemp(join(tmpdir(), 'webgrpo-skill-'));
      dirs.push(dir);
      await cp(model, dir, { recursive: true });
      await writeFile(join(dir, 'onnx/model.onnx'), await mergeLoraIntoOnnx(bytes, weights, adapter));
      await policy.dispose();
      policy = await loadOnnxPolicy({ model: dir });
    }
    return { before, after: await measure(policy, tasks, o.eval), rewards, seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  }
}
