/**
 * The playground's held-out split and its before/after view on a real run: a Training-Free run of
 * the toy policy (a deterministic character-level model) on the arithmetic task with the split the
 * playground builds, read back as the panel reads it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, trainingFreeGrpo, type DatasetItem, type RunBundle } from '../../lib/index.js';
import { skillTasks, splitOf } from '../../lib/tasks.js';
import { alphabetise, arithmetic, copyFormat } from '../../lib/tasks/index.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import {
  beforeAfter,
  HELD_OUT_ITEMS,
  HELD_OUT_SAMPLES,
  heldOutEvaluation,
  heldOutItems,
  heldOutSeed,
  heldOutSize,
  heldOutWaiting,
  percent,
  pointsChange,
  SKILL_HELD_OUT_ITEMS,
  trainingItems,
} from '../../site/lib/held-out.js';
import { promptLabel } from '../../site/lib/tasks.js';

describe('the held-out split', () => {
  it("is the task's generator under another seed, without any prompt the run trains on", () => {
    const train = alphabetise.dataset({ size: 6, seed: 3 });
    const held = heldOutItems(alphabetise, 3, train);
    expect(held).toHaveLength(HELD_OUT_ITEMS);
    expect(heldOutSeed(3)).not.toBe(3);
    const trained = new Set(train.map(promptLabel));
    expect(held.some((item) => trained.has(promptLabel(item)))).toBe(false);
    expect(new Set(held.map(promptLabel)).size).toBe(held.length);
    // A generator whose items overlap the training set's: the overlapping ones are left out.
    const overlapping = { dataset: ({ size = 1 }: { size?: number } = {}) => Array.from({ length: size }, (_, i): DatasetItem => ({ prompt: `q${i % 5}` })) };
    expect(heldOutItems(overlapping, 0, [{ prompt: 'q1' }, { prompt: 'q3' }]).map((i) => i.prompt)).toEqual(['q0', 'q2', 'q4']);
  });

  it("of a skill task is the task's held-out problems, and a run trains on its training split only", () => {
    for (const task of skillTasks) {
      const train = trainingItems(task, 64, 0);
      const held = heldOutItems(task, 0, train, heldOutSize(task));
      expect(held).toHaveLength(SKILL_HELD_OUT_ITEMS);
      const prompt = (item: DatasetItem) => item.messages![0].content;
      // Held out: never in the skill model's pretraining corpus; trained on: only the other split.
      expect(held.map((i) => splitOf(prompt(i)))).toEqual(held.map(() => 'heldout'));
      expect(train.map((i) => splitOf(prompt(i)))).toEqual(train.map(() => 'train'));
    }
    // Other tasks keep their generator and the smaller held-out set.
    expect(trainingItems(alphabetise, 3, 2)).toEqual(alphabetise.dataset({ size: 3, seed: 2 }));
    expect(heldOutSize(alphabetise)).toBe(HELD_OUT_ITEMS);
    expect(copyFormat.dataset({ size: 4, seed: 9 })).not.toEqual(trainingItems(copyFormat, 4, 9));
  });

  it('is sampled twice per prompt with a greedy pass beside, once when greedy, and not at all without items', () => {
    const items = arithmetic.dataset({ size: 2 });
    expect(heldOutEvaluation(items, 0.7)).toEqual({ dataset: items, samples: HELD_OUT_SAMPLES, temperature: 0.7, alsoGreedy: true });
    expect(heldOutEvaluation(items, 0)).toEqual({ dataset: items, samples: 1, temperature: 0 });
    expect(heldOutEvaluation(items, 0)?.samples).toBe(1);
    expect(heldOutEvaluation([], 1)).toBeUndefined();
  });
});

describe('the before/after view', () => {
  let bundle: RunBundle;
  beforeAll(async () => {
    const store = new MemoryStore();
    const dataset = arithmetic.dataset({ size: 3, seed: 5 });
    const run = trainingFreeGrpo({
      policy: createToyPolicy(),
      dataset,
      rewards: arithmetic.rewards,
      mode: 'exemplars',
      task: 'arithmetic',
      store,
      groupSize: 3,
      epochs: 2,
      batchSize: 2,
      maxNewTokens: 8,
      evaluation: heldOutEvaluation(heldOutItems(arithmetic, 5, dataset, 5), 1),
    });
    await run.result();
    bundle = await store.readBundle(run.runId);
  });

  it('sets the base policy (epoch 0) against the latest epoch, answer by answer', () => {
    const view = beforeAfter(bundle)!;
    const evaluations = bundle.run.evaluations!;
    expect(evaluations.map((e) => e.epoch)).toEqual([0, 1, 2]);
    expect(view.before).toBe(evaluations[0]);
    expect(view.after).toBe(evaluations[2]);
    expect(view.k).toBe(HELD_OUT_SAMPLES);
    // The greedy pass of the same two evaluations, one reply per prompt at temperature 0.
    expect(view.greedy).toEqual({ before: evaluations[0].greedyPass!.summary, after: evaluations[2].greedyPass!.summary });
    expect(view.greedy!.before).toMatchObject({ temperature: 0, samples: 1, greedy: true, items: 5 });
    expect(view.examples).toHaveLength(4);
    const items = bundle.run.config.evaluation!.items;
    view.examples.forEach((row, i) => {
      expect(row.index).toBe(i);
      expect(row.prompt).toBe(promptLabel(items[i]));
      expect(row.answer).toBe(String(items[i].answer));
      const first = (epoch: number) => evaluations[epoch].items[i].samples[0];
      expect(row.before).toEqual({ text: first(0).text, reward: first(0).reward, correct: first(0).correct });
      expect(row.after).toEqual({ text: first(2).text, reward: first(2).reward, correct: first(2).correct });
    });
  });

  it('shows only the base policy until an epoch is evaluated, and nothing without evaluations', () => {
    const early = { ...bundle, run: { ...bundle.run, evaluations: bundle.run.evaluations!.slice(0, 1) } };
    const view = beforeAfter(early)!;
    expect(view.after).toBeNull();
    expect(view.greedy?.after).toBeNull();
    expect(view.examples.every((row) => row.after === null)).toBe(true);
    expect(beforeAfter({ ...bundle, run: { ...bundle.run, evaluations: [] } })).toBeNull();
    // A run stored without the greedy pass shows none.
    const sampledOnly = { ...bundle, run: { ...bundle.run, evaluations: bundle.run.evaluations!.map(({ greedyPass: _, ...e }) => e) } };
    expect(beforeAfter(sampledOnly)!.greedy).toBeNull();
  });

  it('says the base model is answering only while the run goes here, and that nothing is once it stopped', () => {
    const stopped = { ...bundle, run: { ...bundle.run, status: 'running' as const, evaluations: [] } };
    expect(heldOutWaiting(stopped, true).before).toBe('The base model is answering 5 held-out prompts before the first step.');
    const idle = heldOutWaiting(stopped, false);
    expect(idle.before).toMatch(/^Not evaluated: the run stopped before the base model had answered its 5 held-out prompts, and nothing is running\./);
    for (const text of Object.values(idle)) expect(text).not.toMatch(/is answering|after the first epoch$/);
  });

  it('writes shares as percentages and their change in points', () => {
    expect(percent(0.375)).toBe('38%');
    expect(percent(null)).toBe('—');
    expect(pointsChange(0.25, 0.6)).toBe(35);
    expect(pointsChange(0.5, null)).toBeNull();
  });
});
