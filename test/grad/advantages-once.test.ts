/**
 * A gradient run's advantages are computed once per step, by the driver: what the store keeps,
 * what the `advantages` events say and what the loss trains on are the same numbers, for every
 * `scaleRewards` (with 'batch', the std is the whole step's, for all three).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, GrpoTrainer, type GradientEvent } from '../../lib/grad.js';
import { MemoryStore } from '../../lib/index.js';
import { computeAdvantages, nanMean, nanStd, type AdvantageResult } from '../../lib/math.js';
import { digits } from '../../lib/tasks/index.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
});
afterAll(async () => {
  await policy?.dispose();
});

describe.each(['group', 'batch', 'none'] as const)('scaleRewards %s', (scaleRewards) => {
  it('stores, emits and trains on the same advantages', async () => {
    const given: AdvantageResult[] = [];
    const trainStep = GrpoTrainer.prototype.trainStep;
    GrpoTrainer.prototype.trainStep = function (batch, prompts, options) {
      if (options?.advantages) given.push(options.advantages);
      return trainStep.call(this, batch, prompts, options);
    };
    const store = new MemoryStore();
    const events: GradientEvent[] = [];
    try {
      const run = gradientGrpo({
        policy,
        dataset: digits.dataset({ size: 4, seed: 3 }),
        rewards: digits.rewards,
        groupSize: 4,
        batchSize: 2,
        maxNewTokens: 6,
        numIterations: 2,
        loss: { scaleRewards },
        store,
        runId: 'adv',
      });
      for await (const event of run) events.push(event);
      (await run.result()).trainer.dispose();
    } finally {
      GrpoTrainer.prototype.trainStep = trainStep;
    }

    const steps = await store.listSteps('adv');
    expect(steps).toHaveLength(2);
    expect(given).toHaveLength(4);
    for (const [s, step] of steps.entries()) {
      const stored = step.items.flatMap((item) => item.rollouts.map((r) => r.advantage));
      const emitted = events.flatMap((e) => (e.type === 'advantages' && e.step === step.step ? e.advantages : []));
      expect(emitted).toEqual(stored);
      // Both optimizer updates of the step train on exactly those numbers.
      for (const used of given.slice(2 * s, 2 * s + 2)) expect(used.advantages).toEqual(stored);
      const metrics = events.flatMap((e) => (e.type === 'train' && e.step === step.step ? [e.metrics] : []));
      for (const m of metrics) {
        expect(m.advantageMean).toBe(nanMean(stored));
        expect(m.advantageStd).toBe(nanStd(stored));
        expect(m.advantageMin).toBe(Math.min(...stored));
        expect(m.advantageMax).toBe(Math.max(...stored));
      }
      // They are the step's advantages under this scaling, over all of its groups.
      const table = step.items.flatMap((item) => item.rollouts.map((r) => r.rewards));
      const weights = digits.rewards.map((r) => r.weight ?? 1);
      expect(stored).toEqual(computeAdvantages(table, { groupSize: 4, weights, scaleRewards }).advantages);
      if (scaleRewards === 'batch') {
        // Not what each group alone would give: the scaling really is the step's.
        const perGroup = computeAdvantages(table, { groupSize: 4, weights, scaleRewards: 'group' }).advantages;
        expect(stored).not.toEqual(perGroup);
      }
    }
  }, 120_000);
});
