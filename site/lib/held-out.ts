/**
 * The playground's held-out evaluation: the split a run is evaluated on (the chosen task's
 * generator under another seed, without any prompt the run trains on; for a skill task, its
 * held-out problems, which the skill model never saw in pretraining and a run never trains on; for
 * an upload, the items after those it trains on), and what the before/after panel draws from a run's evaluations:
 * the base policy (epoch 0) against the trained one (the latest epoch), and their answers to the
 * same held-out prompts side by side. Pure.
 */
import type { DatasetItem, EvaluationRecord, EvaluationSummary, LoopEvaluationOptions, RunBundle } from '../../lib/index.js';
import type { Task } from '../../lib/tasks.js';
import { plural } from './plural.js';
import { promptLabel, skillTaskOf } from './tasks.js';

/** Held-out prompts per run: few enough to evaluate in seconds on the bundled model. */
export const HELD_OUT_ITEMS = 8;
/**
 * Held-out prompts of a skill task: their replies are a few characters, so the skill model answers
 * 32 in about a second, and a rise of ten points is more than the noise of 8 would be.
 */
export const SKILL_HELD_OUT_ITEMS = 32;
/** Samples per held-out prompt: pass@2 next to the exact-match rate. */
export const HELD_OUT_SAMPLES = 2;

/** The seed of a task's held-out generator: never the training seed. */
export function heldOutSeed(seed: number): number {
  return seed + 1_000_003;
}

/** A run's training items: a skill task's from its training split, never its held-out problems. */
export function trainingItems(task: Task, size: number, seed: number): DatasetItem[] {
  return skillTaskOf(task)?.dataset({ size, seed, split: 'train' }) ?? task.dataset({ size, seed });
}

/** How many held-out prompts a run of `task` is evaluated on. */
export function heldOutSize(task: Pick<Task, 'dataset'>): number {
  return skillTaskOf(task) ? SKILL_HELD_OUT_ITEMS : HELD_OUT_ITEMS;
}

/**
 * `size` items of `task` under the held-out seed that are not among `train` (same prompt); for a
 * skill task, from its held-out split.
 */
export function heldOutItems(task: Pick<Task, 'dataset'>, seed: number, train: readonly DatasetItem[], size = HELD_OUT_ITEMS): DatasetItem[] {
  const seen = new Set(train.map(promptLabel));
  const options = { size: size * 3, seed: heldOutSeed(seed) };
  const candidates = skillTaskOf(task)?.dataset({ ...options, split: 'heldout' }) ?? task.dataset(options);
  const kept: DatasetItem[] = [];
  for (const item of candidates) {
    const label = promptLabel(item);
    if (seen.has(label)) continue;
    seen.add(label);
    kept.push(item);
    if (kept.length === size) break;
  }
  return kept;
}

/** The evaluation a run of the playground gets: none without held-out items. */
export function heldOutEvaluation(items: DatasetItem[], temperature: number): LoopEvaluationOptions | undefined {
  if (items.length === 0) return undefined;
  // Greedy decoding has one answer per prompt: more samples would repeat it. Above 0 the greedy
  // pass runs too (one short reply per prompt): what sampling gains and what greedy gains differ,
  // and greedy is what a person deploying the model gets.
  return temperature === 0 ? { dataset: items, samples: 1, temperature } : { dataset: items, samples: HELD_OUT_SAMPLES, temperature, alsoGreedy: true };
}

/** One held-out prompt with the base and the trained policy's first answers. */
export interface ExampleRow {
  index: number;
  prompt: string;
  /** The reference answer as text, when the item has one. */
  answer: string | null;
  before: SampleCell;
  after: SampleCell | null;
}

export interface SampleCell {
  /** Model output: untrusted text, rendered as text only. */
  text: string;
  reward: number | null;
  correct: boolean | null;
}

export interface BeforeAfter {
  before: EvaluationRecord;
  /** The latest evaluation after training; null until the first epoch's. */
  after: EvaluationRecord | null;
  examples: ExampleRow[];
  /** The largest k pass@k is reported for. */
  k: number;
  /** The greedy pass beside the sampled one, where the run stored it (`alsoGreedy`); after is null until an epoch's. */
  greedy: { before: EvaluationSummary; after: EvaluationSummary | null } | null;
}

/** What the panel shows of a run's evaluations, or null when it has none (yet). */
export function beforeAfter(bundle: RunBundle, examples = 4): BeforeAfter | null {
  const evaluations = bundle.run.evaluations ?? [];
  const before = evaluations.find((e) => e.epoch === 0);
  if (!before) return null;
  const after = evaluations.filter((e) => e.epoch > 0).at(-1) ?? null;
  const items = bundle.run.config.evaluation?.items ?? [];
  const cell = (record: EvaluationRecord, index: number): SampleCell | null => {
    const sample = record.items.find((i) => i.index === index)?.samples[0];
    return sample ? { text: sample.text, reward: sample.reward, correct: sample.correct } : null;
  };
  const rows: ExampleRow[] = before.items.slice(0, examples).map((item) => {
    const answer = item.answer;
    return {
      index: item.index,
      prompt: promptLabel(items[item.index] ?? item.prompt),
      answer: typeof answer === 'string' || typeof answer === 'number' ? String(answer) : answer === undefined ? null : JSON.stringify(answer),
      before: cell(before, item.index)!,
      after: after ? cell(after, item.index) : null,
    };
  });
  const greedy = before.greedyPass ? { before: before.greedyPass.summary, after: after?.greedyPass?.summary ?? null } : null;
  return { before, after, examples: rows, k: before.summary.samples, greedy };
}

/** A share as a whole percentage, or a dash. */
export function percent(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : `${Math.round(x * 100)}%`;
}

/** The change between two shares in percentage points, signed, or null. */
export function pointsChange(before: number | null | undefined, after: number | null | undefined): number | null {
  return before === null || before === undefined || after === null || after === undefined ? null : Math.round((after - before) * 100);
}

/**
 * What the panel says where an evaluation is missing: while the run goes in this tab, what is
 * being answered; once it has stopped (interrupted, cancelled, failed), that nothing is, and what
 * brings it. `liveHere`: this tab drives the run now.
 */
export function heldOutWaiting(bundle: RunBundle, liveHere: boolean): { before: string; trained: string; after: string } {
  const prompts = plural(bundle.run.config.evaluation?.items.length ?? 0, 'held-out prompt');
  if (liveHere) return { before: `The base model is answering ${prompts} before the first step.`, trained: 'the trained one after the first epoch', after: 'after the first epoch' };
  return {
    before: `Not evaluated: the run stopped before the base model had answered its ${prompts}, and nothing is running. Resume the run to evaluate them first.`,
    trained: 'no trained one: the run stopped before its first epoch ended',
    after: 'none: the run stopped before its first epoch ended',
  };
}
