/**
 * A run's row in the run list (run-row.ts): runs that differ in method, model or settings read
 * differently, and the held-out exact match before -> after is in the row, read from the
 * evaluations a real run stored.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore, trainingFreeGrpo, type RunRecord } from '../../lib/index.js';
import { arithmetic } from '../../lib/tasks/index.js';
import { heldOutEvaluation, heldOutItems, percent } from '../../site/lib/held-out.js';
import { runRow } from '../../site/lib/run-row.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { sampleRun } from '../tfgrpo/helpers/records.js';

describe('a run in the run list', () => {
  it('names task, method and model, and the settings that tell runs of one method apart', () => {
    const base = sampleRun('a');
    const lora = (lr: number, seed: number) => ({ ...base, kind: 'lora', config: { ...base.config, task: 'sort-words', seed, policy: { model: 'http://x/models/webgrpo-skill/', backend: 'wasm' }, optimizer: { lr }, lora: { r: 8 } } }) as unknown as RunRecord;
    const a = runRow(lora(0.002, 0));
    expect(a.title).toBe('sort-words · LoRA · webgrpo-skill');
    expect(a.settings).toBe(`${base.itemCount} prompts · ${Math.ceil(base.itemCount / base.config.batchSize) * base.config.epochs} steps · G=2 · T=${base.config.temperature} · lr 0.002 · rank 8 · seed 0`);
    expect(runRow(lora(0.01, 0)).settings).not.toBe(a.settings);
    expect(runRow(lora(0.002, 3)).settings).not.toBe(a.settings);
    expect(a.heldOut).toBeNull();
  });

  it('shows the held-out exact match before and after, and greedy beside it', async () => {
    const store = new MemoryStore();
    const dataset = arithmetic.dataset({ size: 4, seed: 5 });
    const run = trainingFreeGrpo({
      mode: 'exemplars',
      policy: createToyPolicy(),
      dataset,
      rewards: arithmetic.rewards,
      store,
      groupSize: 2,
      epochs: 1,
      batchSize: 2,
      maxNewTokens: 6,
      seed: 1,
      task: 'arithmetic',
      evaluation: heldOutEvaluation(heldOutItems(arithmetic, 5, dataset, 4), 1),
    });
    const { runId } = await run.result();
    const record = (await store.getRun(runId))!;
    const [before, after] = record.evaluations!;
    const row = runRow(record);
    expect(row.title).toBe('arithmetic · exemplars · toy');
    expect(row.heldOut).toBe(
      `held-out ${percent(before.summary.accuracy)} → ${percent(after.summary.accuracy)} at T=1, greedy ${percent(before.greedyPass!.summary.accuracy)} → ${percent(after.greedyPass!.summary.accuracy)}`,
    );
  });
});
