/**
 * What a library a Training-Free run learns is worth on named-format: a run started through the
 * registry (`startRun(methodOf('training-free'), options)`) on training-split problems, and its own held-out
 * evaluation before its first step (no library) and after its last (the library it learnt), greedy
 * and at T=1. Used by the reader's card (reader.ts), `npm run bench -- exemplars` and the reader's
 * test, so all three measure the same thing with the same settings.
 */
import type { EvaluationRecord, ExperienceLibrary, RunWarning } from '../../lib/index.js';
import type { Policy } from '../../lib/core/policy.js';
import { methodOf, startRun } from '../../lib/method.js';
import { namedFormat } from '../../lib/tasks.js';
import { MAX_REPLY_TOKENS } from './accuracy.js';

/**
 * The run settings: the method's library defaults (any answer above its group's mean may become
 * an exemplar, at most 8 kept, 512 tokens of experiences: what the reader's corpus shows), groups
 * of 8 at T=1 so that a right answer turns up among a group's replies.
 */
export const READER_RUN = {
  groupSize: 8,
  batchSize: 4,
  temperature: 1,
  maxNewTokens: MAX_REPLY_TOKENS,
  criticMaxNewTokens: 128,
  /** One experience per prompt, the closest to its task: the reader copies what it is shown, so it must be shown the entry of its code. */
  retrieveExperiences: 1,
  maxExemplars: 24,
} as const;

/**
 * Lessons mode: one problem per step, so the batch merge answers one operation and its lesson may
 * be as long as the group update's (the schema splits the reply's tokens among the operations:
 * four of them in 128 tokens would cut every lesson to 20 characters).
 */
export const READER_LESSONS_RUN = { ...READER_RUN, batchSize: 1 } as const;

export interface GainOptions {
  mode: 'exemplars' | 'lessons';
  /** Training-split problems and their seed (also the run's seed). */
  train: { size: number; seed: number };
  /** Held-out problems, their dataset seed, T=1 replies per problem and the sampler's seed. */
  heldOut: { size: number; seed: number; samples: number; samplerSeed: number };
}

export interface Gain {
  before: EvaluationRecord;
  after: EvaluationRecord;
  library: ExperienceLibrary;
  seconds: number;
  /** Critic steps asked (summaries, critiques, group updates, batch merges) and those skipped with a warning. */
  criticSteps: { asked: number; skipped: number };
  warnings: RunWarning[];
}

/** Greedy or T=1 exact match of an evaluation. */
export const accuracyOf = (e: EvaluationRecord, greedy: boolean): number => (greedy ? e.greedyPass!.summary.accuracy : e.summary.accuracy) ?? 0;

/** A warning that says a critic step was left out (the library then lacks what it would have added). */
const SKIPPED = /skipped|No summary|gave no summary/;

export async function libraryGain(policy: Policy, options: GainOptions): Promise<Gain> {
  const dataset = namedFormat.dataset({ size: options.train.size, seed: options.train.seed, split: 'train' });
  const heldOut = namedFormat.dataset({ size: options.heldOut.size, seed: options.heldOut.seed });
  const started = performance.now();
  const run = startRun(methodOf('training-free')!, {
    policy,
    dataset,
    rewards: namedFormat.rewards,
    task: namedFormat.name,
    mode: options.mode,
    ...(options.mode === 'lessons' ? READER_LESSONS_RUN : READER_RUN),
    epochs: 1,
    seed: options.train.seed,
    evaluation: { dataset: heldOut, temperature: 1, samples: options.heldOut.samples, alsoGreedy: true, seed: options.heldOut.samplerSeed, correct: { reward: 'exact' } },
  });
  const evaluations: EvaluationRecord[] = [];
  const warnings: RunWarning[] = [];
  const criticSteps = { asked: 0, skipped: 0 };
  for await (const event of run as AsyncIterable<{ type: string } & Record<string, unknown>>) {
    if (event.type === 'eval') evaluations.push(event.evaluation as EvaluationRecord);
    if (event.type === 'summaries') criticSteps.asked += (event.summaries as string[]).length;
    if (event.type === 'critique' || event.type === 'group-update') criticSteps.asked += 1;
    if (event.type === 'operations' && event.merge !== undefined) criticSteps.asked += 1;
    if (event.type === 'warning') {
      const warning = event.warning as RunWarning;
      warnings.push(warning);
      if (SKIPPED.test(warning.message)) criticSteps.skipped += 1;
    }
  }
  const library = ((await run.result()) as { library: ExperienceLibrary }).library;
  return { before: evaluations[0], after: evaluations.at(-1)!, library, seconds: (performance.now() - started) / 1000, criticSteps, warnings };
}
