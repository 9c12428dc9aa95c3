/**
 * A full-depth LoRA GRPO run on the bundled skill model, started through the method registry
 * (`startRun(methodOf('lora'), options)`, as the playground and the CLI start it) on one task's training split,
 * with DAPO's dynamic sampling, and the run's own held-out evaluation before the first step and
 * after the last (`alsoGreedy`: one greedy reply per problem beside the sampled ones). What the
 * `teach` benchmark reports and test/grad/teach.test.ts re-measures.
 */
import type { DatasetItem, EvaluationRecord } from '../../lib/index.js';
import { methodOf, startRun } from '../../lib/method.js';
import type { SkillTask } from '../../lib/tasks.js';
import type { GradientLossOptions } from '../../lib/methods/gradient/training-options.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { MAX_REPLY_TOKENS } from '../pretrain/accuracy.js';
import { SKILL_DIR } from './_skill-grpo.js';

export interface TeachOptions {
  task: SkillTask;
  /** The model folder (default the bundled webgrpo-skill). */
  model?: string;
  /** Seed of the training problems, every training sampling call and the adapter's A. */
  seed: number;
  /** Training-split problems; one pass over them. */
  size: number;
  epochs: number;
  batchSize: number;
  groupSize: number;
  lr: number;
  /** Optimizer updates per generation batch (the method's default: 1). */
  iterations?: number;
  /** The objective's options (the method's defaults: DAPO loss, KL 0.01, entropy 0.01). */
  loss?: GradientLossOptions;
  /** LoRA rank, alpha twice it as the page sets it (default 8). */
  rank?: number;
  /** Most new tokens per reply (default MAX_REPLY_TOKENS, the page's 24). */
  maxNewTokens?: number;
  /** Held-out problems (dataset seed), replies per problem at T=1, the evaluation's sampler seed. */
  eval: { size: number; seed: number; samples: number; samplerSeed: number };
}

export interface TeachResult {
  heldOut: DatasetItem[];
  before: EvaluationRecord;
  after: EvaluationRecord;
  /** Mean training reward of each step (exact 1 plus the task's partial credit). */
  rewards: number[];
  /** Groups sampled, flat groups sampled again and flat groups left out of the update, over the run. */
  groups: { sampled: number; resampled: number; dropped: number };
  seconds: number;
}

export async function teachRun(o: TeachOptions): Promise<TeachResult> {
  const dataset = o.task.dataset({ size: o.size, seed: o.seed, split: 'train' });
  const heldOut = o.task.dataset({ size: o.eval.size, seed: o.eval.seed });
  const policy = await loadOnnxPolicy({ model: o.model ?? SKILL_DIR });
  const started = performance.now();
  try {
    const run = startRun(methodOf('lora')!, {
      policy,
      dataset,
      rewards: o.task.rewards,
      task: o.task.name,
      groupSize: o.groupSize,
      batchSize: o.batchSize,
      epochs: o.epochs,
      temperature: 1,
      maxNewTokens: o.maxNewTokens ?? MAX_REPLY_TOKENS,
      ...(o.rank ? { lora: { r: o.rank, alpha: 2 * o.rank } } : {}),
      seed: o.seed,
      optimizer: { lr: o.lr },
      ...(o.loss ? { loss: o.loss } : {}),
      ...(o.iterations ? { numIterations: o.iterations } : {}),
      dynamicSampling: true,
      evaluation: { dataset: heldOut, temperature: 1, samples: o.eval.samples, alsoGreedy: true, seed: o.eval.samplerSeed, correct: { reward: 'exact' } },
    });
    const evaluations: EvaluationRecord[] = [];
    const rewards: number[] = [];
    const groups = { sampled: 0, resampled: 0, dropped: 0 };
    for await (const event of run as AsyncIterable<{ type: string } & Record<string, unknown>>) {
      if (event.type === 'eval') evaluations.push(event.evaluation as EvaluationRecord);
      if (event.type === 'step-end') {
        const s = event.stats as { groups: number; meanReward: number | null; resampledGroups?: number; droppedGroups?: number };
        rewards.push(s.meanReward ?? 0);
        groups.sampled += s.groups;
        groups.resampled += s.resampledGroups ?? 0;
        groups.dropped += s.droppedGroups ?? 0;
      }
    }
    const result = (await run.result()) as { trainer: { dispose(): void } };
    result.trainer.dispose();
    return { heldOut, before: evaluations[0], after: evaluations.at(-1)!, rewards, groups, seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
  }
}

/** Share of held-out problems answered exactly right by the greedy pass, and by the replies at T=1. */
export function accuracies(record: EvaluationRecord): { greedy: number; sampled: number } {
  return { greedy: record.greedyPass!.summary.accuracy ?? 0, sampled: record.summary.accuracy ?? 0 };
}
