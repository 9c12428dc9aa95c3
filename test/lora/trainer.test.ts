/**
 * GRPO updates of a full-depth adapter on the bundled model's weights, through the one trainer
 * over the LoRA engine: the completion with the positive advantage gains probability and the
 * negative one loses it, the optimizer's state resumes an identical run, with a KL term the
 * reference is the adapter-off model, and the step run part by part (the engine's forwardBackward)
 * is the update of a forward then a backward.
 */
import { describe, expect, it, vi } from 'vitest';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { createLoraAdapter, loraTensors, type LoraAdapter } from '../../lib/lora/adapter.js';
import type { LoraOptimizerState } from '../../lib/lora/optimizer.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { GrpoConfig } from '../../lib/math/batch.js';
import { buildLoraGraphs, loraEngine } from '../../lib/train/lora-engine.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const prompts = [{ prompt: 'the prompt is given as token ids' }];

/** A trainer of `adapter` whose one prompt encodes to `promptIds`. */
function trainer(weights: DecoderWeights, adapter: LoraAdapter, promptIds: number[], lr: number, config: Partial<{ beta: number }> = {}, state?: LoraOptimizerState) {
  return new GrpoTrainer(loraEngine({ weights, adapter, promptIds: () => promptIds }, state ? { state } : {}), { lr }, new GrpoConfig({ numGenerations: 2, beta: 0, entropyCoeff: 0, ...config }));
}

/** One group of two completions, sampled (old log-probs) under `adapter`, rewarded 1 and 0. */
async function batchOf(weights: DecoderWeights, adapter: LoraAdapter, promptIds: number[], completions: number[][]) {
  const logprobs = await graphLogprobs(weights, adapter, { promptIds, completions });
  return groupRolloutBatch([{ completions: completions.map((tokenIds, c) => ({ tokenIds, logprobs: logprobs[c] })), rewards: [1, 0] }]);
}

describe('GrpoTrainer over the LoRA engine, step by step', () => {
  it('moves probability toward the completion with the positive advantage', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 4, seed: 2 });
    const promptIds = [1, 40, 41, 42];
    const completions = [[50, 51, 52], [60, 61]];
    const scores = async () => (await graphLogprobs(weights, adapter, { promptIds, completions })).map(sum);
    const before = await scores();
    const batch = await batchOf(weights, adapter, promptIds, completions);
    const t = trainer(weights, adapter, promptIds, 5e-3);
    const first = await t.trainStep(batch, prompts);
    expect(first.metrics.tokens).toBe(5);
    expect(first.metrics.gradNorm).toBeGreaterThan(0);
    // The batch was sampled from this adapter: every ratio is 1, nothing is clipped.
    expect(first.metrics.clipRatioRegion).toBe(0);
    // Further updates on the same samples (TRL's num_iterations): the ratio to the sampling
    // policy moves, so the clipped objective falls until the ratios reach the clip range.
    const losses = [first.loss];
    for (let step = 1; step < 5; step++) losses.push((await t.trainStep(batch, prompts)).loss);
    expect(losses[2]).toBeLessThan(losses[0]);
    const after = await scores();
    expect(after[0]).toBeGreaterThan(before[0] + 0.5);
    expect(after[1]).toBeLessThan(before[1] - 0.5);
    expect(t.engine.updates).toBe(5);
    t.dispose();
  });

  it('resumes from its optimizer state to the same adapter, bit for bit', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const promptIds = [1, 20];
    const fresh = () => createLoraAdapter(weights.shape, { r: 2, targetModules: ['q_proj', 'down_proj'], seed: 4 });
    const batch = await batchOf(weights, fresh(), promptIds, [[30, 31], [32]]);
    const straight = fresh();
    const t1 = trainer(weights, straight, promptIds, 1e-3);
    await t1.trainStep(batch, prompts);
    await t1.trainStep(batch, prompts);

    const resumed = fresh();
    const t2 = trainer(weights, resumed, promptIds, 1e-3);
    await t2.trainStep(batch, prompts);
    const t3 = trainer(weights, resumed, promptIds, 1e-3, {}, structuredClone(t2.engine.optimizerState));
    await t3.trainStep(batch, prompts);
    expect(resumed.layers).toEqual(straight.layers);
    for (const t of [t1, t2, t3]) t.dispose();
  });

  it('takes the KL reference from the adapter-off model: zero while B is zero, then growing', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 1 });
    const batch = await batchOf(weights, adapter, [1], [[2, 3], [4]]);
    const t = trainer(weights, adapter, [1], 1e-2, { beta: 0.1 });
    expect((await t.trainStep(batch, prompts)).metrics.kl).toBe(0);
    expect((await t.trainStep(batch, prompts)).metrics.kl).toBeGreaterThan(0);
    t.dispose();
  });

  it('runs the step part by part where the loss allows it: the update of a forward then a backward, with a KL reference and an entropy term', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const promptIds = [1, 40, 41, 42];
    const completions = [[50, 51, 52, 53], [60, 61], [70, 71, 72], [80]];
    const sampled = createLoraAdapter(weights.shape, { r: 4, seed: 5 });
    const logprobs = await graphLogprobs(weights, sampled, { promptIds, completions });
    const batch = groupRolloutBatch([{ completions: completions.map((tokenIds, c) => ({ tokenIds, logprobs: logprobs[c] })), rewards: [1, 0, 0.5, 0.2] }]);
    const configs: Array<[string, ConstructorParameters<typeof GrpoConfig>[0], boolean]> = [
      ['dapo with KL and an entropy bonus', { beta: 0.05, entropyCoeff: 0.02 }, true],
      ['grpo, no entropy term (the head takes d log p / d hidden in its forward)', { lossType: 'grpo', beta: 0, entropyCoeff: 0 }, true],
      ['topEntropyQuantile 0.5: a forward of the whole batch, then its backward', { topEntropyQuantile: 0.5, entropyCoeff: 0 }, false],
    ];
    for (const [what, config, partByPart] of configs) {
      const run = async (hide: boolean) => {
        const adapter = createLoraAdapter(weights.shape, { r: 4, seed: 5 });
        // Micro-batches of a row or two, so a step has several parts.
        const graph = await buildLoraGraphs({ weights, adapter }, { memory: { microBatchTokens: 8, activationBudget: 2 ** 29 } });
        const engine = loraEngine({ weights, adapter, promptIds: () => promptIds }, { graph });
        const parts = vi.spyOn(engine, 'forwardBackward');
        // The same engine without forwardBackward: the trainer's forward, then backward.
        if (hide) Object.defineProperty(engine, 'forwardBackward', { value: undefined });
        const t = new GrpoTrainer(engine, { lr: 1e-2 }, new GrpoConfig({ numGenerations: 4, ...config }));
        const losses = [(await t.trainStep(batch, prompts)).loss, (await t.trainStep(batch, prompts)).loss];
        t.dispose();
        return { losses, adapter, calls: parts.mock.calls.length };
      };
      const [fused, split] = [await run(false), await run(true)];
      expect(fused.calls, what).toBe(partByPart ? 2 : 0);
      expect(split.calls, what).toBe(0);
      fused.losses.forEach((loss, i) => expect(Math.abs(loss - split.losses[i]), what).toBeLessThan(1e-6 * Math.max(1, Math.abs(loss))));
      const [a, b] = [loraTensors(fused.adapter), loraTensors(split.adapter)];
      const scale = Math.max(...b.map((t) => Math.max(...Array.from(t, Math.abs))));
      expect(Math.max(...a.map((t, j) => Math.max(...Array.from(t, (v, i) => Math.abs(v - b[j][i])))))).toBeLessThan(1e-5 * scale);
      // Not vacuous: the steps moved the adapter.
      expect(b.some((t, j) => t.some((v, i) => v !== loraTensors(createLoraAdapter(weights.shape, { r: 4, seed: 5 }))[j][i]))).toBe(true);
    }
  });
});
