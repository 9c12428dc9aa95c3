/** Comparing runs (site/lib/compare.ts): curves aligned on one axis, settings side by side. */
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, trainingFreeGrpo, type LoopEvaluationOptions, type RunBundle } from '../../lib/index.js';
import { alphabetise } from '../../lib/tasks/index.js';
import { heldOutBaselines, heldOutRows, klOverlay, libraryOverlay, overlay, rewardOverlay, settingRows } from '../../site/lib/compare.js';
import { stepSeries } from '../../site/lib/view.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';

let short: RunBundle;
let long: RunBundle;

/** A training-free run (exemplars) of the toy model on two alphabetise prompts, read back as the page reads it. */
async function toyRun(settings: { epochs: number; groupSize: number; evaluation?: LoopEvaluationOptions }, store = new MemoryStore()): Promise<RunBundle> {
  const r = trainingFreeGrpo({ policy: createToyPolicy(), dataset: alphabetise.dataset({ size: 2 }), rewards: alphabetise.rewards, mode: 'exemplars', task: 'alphabetise', store, batchSize: 2, maxNewTokens: 8, ...settings });
  await r.result();
  return store.readBundle(r.runId);
}

/** Evaluated on three held-out prompts, two answers each at T=1. */
const heldOut = (more: Partial<LoopEvaluationOptions> = {}): LoopEvaluationOptions => ({ dataset: alphabetise.dataset({ size: 3, seed: 99 }), samples: 2, temperature: 1, ...more });

/** Two runs that differ in their epochs and group size. */
beforeAll(async () => {
  const store = new MemoryStore();
  short = await toyRun({ epochs: 1, groupSize: 3 }, store);
  long = await toyRun({ epochs: 3, groupSize: 4 }, store);
});

describe('overlay', () => {
  it('aligns curves on the union of their x values, with gaps where a curve has no point', () => {
    expect(overlay([
      { label: 'a', x: [1, 2], y: [0.1, 0.2] },
      { label: 'b', x: [2, 3], y: [0.5, null] },
      { label: 'c', x: [], y: [] },
    ])).toEqual({ x: [1, 2, 3], series: [{ label: 'a', values: [0.1, 0.2, null] }, { label: 'b', values: [null, 0.5, null] }] });
  });

  it('draws each run\'s mean reward per step and library size; KL only for runs that have one', () => {
    const rewards = rewardOverlay([short, long]);
    expect(rewards.x).toEqual([1, 2, 3]);
    expect(rewards.series.map((s) => s.label)).toEqual([expect.stringMatching(/^#1 alphabetise · exemplars, /), expect.stringMatching(/^#2 alphabetise · exemplars, /)]);
    expect(rewards.series[0].values).toEqual([stepSeries(short).mean[0], null, null]);
    expect(rewards.series[1].values).toEqual(stepSeries(long).mean);
    expect(libraryOverlay([short, long]).series[1].values).toEqual(stepSeries(long).librarySize);
    expect(klOverlay([short, long]).series).toEqual([]);
  });
});

describe('settingRows', () => {
  it('puts every setting side by side and marks where the runs differ', () => {
    const rows = Object.fromEntries(settingRows([short, long]).map((r) => [r.setting, r]));
    expect(rows['Group size']).toEqual({ setting: 'Group size', values: ['3', '4'], differs: true });
    expect(rows['Epochs'].values).toEqual(['1', '3']);
    expect(rows['Method']).toEqual({ setting: 'Method', values: ['exemplars', 'exemplars'], differs: false });
    expect(rows['Adapter rank'].values).toEqual(['–', '–']);
  });
});

describe('heldOutRows', () => {
  it('gives each evaluated run its held-out before -> after per temperature stored, and a run never evaluated none', async () => {
    const evaluated = await toyRun({ epochs: 1, groupSize: 3, evaluation: heldOut() });
    const stored = evaluated.run.evaluations ?? [];
    expect(stored.map((e) => e.epoch)).toEqual([0, 1]);
    // The same evaluations as if also stored greedy (one answer each): a run with both temperatures.
    const greedy = stored.map((e) => ({ ...e, summary: { ...e.summary, temperature: 0, greedy: true, samples: 1 } }));
    const both = { ...evaluated, run: { ...evaluated.run, evaluations: [...stored, ...greedy] } };
    const rows = heldOutRows([short, both]);
    expect(rows.map((row) => [row.run, row.decoding, row.size, row.afterEpoch])).toEqual([
      [1, 'greedy', '3 prompts × 1 answer', 1],
      [1, 'T=1', '3 prompts × 2 answers', 1],
    ]);
    const [before, after] = stored.map((e) => e.summary);
    expect(rows[1].meanReward).toBe(`${before.meanReward!.toFixed(3)} → ${after.meanReward!.toFixed(3)}`);
    expect(rows[1].exactMatch).toBe(`${Math.round(before.accuracy! * 100)}% → ${Math.round(after.accuracy! * 100)}%`);
    expect(rows[1].points).toBe(Math.round((after.accuracy! - before.accuracy!) * 100));
  });

  it('gives a run evaluated with a greedy pass beside T=1 a greedy row from that pass', async () => {
    const bundle = await toyRun({ epochs: 1, groupSize: 3, evaluation: heldOut({ alsoGreedy: true }) });
    const [before, after] = (bundle.run.evaluations ?? []).map((e) => e.greedyPass!.summary);
    const rows = heldOutRows([bundle]);
    expect(rows.map((row) => [row.run, row.decoding, row.size, row.afterEpoch])).toEqual([
      [0, 'greedy', '3 prompts × 1 answer', 1],
      [0, 'T=1', '3 prompts × 2 answers', 1],
    ]);
    expect(rows[0].meanReward).toBe(`${before.meanReward!.toFixed(3)} → ${after.meanReward!.toFixed(3)}`);
    // Beside it, what one constant reply scores on those 3 prompts, and whether the greedy replies collapsed.
    const [note] = heldOutBaselines([bundle, { ...bundle, run: { ...bundle.run, evaluations: [] } }]);
    expect(note).toMatch(/^One constant reply \(“.+”\) scores 33% on these prompts\. The trained model’s greedy replies (did not collapse to one reply or one format\.|collapsed to one reply, “.*” \(3 of 3\): .*)$/);
    expect(heldOutBaselines([{ ...bundle, run: { ...bundle.run, evaluations: [] } }])).toEqual([null]);
  });
});
