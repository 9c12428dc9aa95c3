/**
 * GRPO updates of a full-depth adapter on the bundled model: the completion with the positive
 * advantage gains probability and the negative one loses it, the optimizer's state resumes an
 * identical run, and a KL term needs reference log-probs.
 */
import { describe, expect, it } from 'vitest';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { loraLogprobs } from '../../lib/lora/model.js';
import { LoraTrainer, type LoraGroup } from '../../lib/train/lora-trainer.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('LoraTrainer', () => {
  it('moves probability toward the completion with the positive advantage', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 4, seed: 2 });
    const group: LoraGroup = { promptIds: [1, 40, 41, 42], completions: [[50, 51, 52], [60, 61]], advantages: [1, -1] };
    const trainer = new LoraTrainer(weights, adapter, { optimizer: { lr: 5e-3 } });
    const score = (c: number) => sum(loraLogprobs(weights, adapter, { tokens: [...group.promptIds, ...group.completions[c]], completionStart: 4 }));
    const before = [score(0), score(1)];
    const first = await trainer.step([group]);
    expect(first.metrics.tokens).toBe(5);
    expect(first.metrics.gradNorm).toBeGreaterThan(0);
    expect(sum(first.logps[0])).toBeCloseTo(before[0], 10);
    // Further updates on the same samples (TRL's num_iterations): the ratio to the sampling
    // policy moves, so the clipped objective falls until the ratios reach the clip range.
    const losses = [first.loss];
    for (let step = 1; step < 5; step++) losses.push((await trainer.step([{ ...group, oldLogps: first.logps }])).loss);
    expect(losses[2]).toBeLessThan(losses[0]);
    const after = [score(0), score(1)];
    expect(after[0]).toBeGreaterThan(before[0] + 0.5);
    expect(after[1]).toBeLessThan(before[1] - 0.5);
    expect(trainer.state.step).toBe(5);
  });

  it('resumes from its optimizer state to the same adapter, bit for bit', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const group: LoraGroup = { promptIds: [1, 20], completions: [[30, 31], [32]], advantages: [0.5, -0.5] };
    const straight = createLoraAdapter(weights.shape, { r: 2, targetModules: ['q_proj', 'down_proj'], seed: 4 });
    const t1 = new LoraTrainer(weights, straight, { optimizer: { lr: 1e-3 } });
    await t1.step([group]);
    await t1.step([group]);

    const resumed = createLoraAdapter(weights.shape, { r: 2, targetModules: ['q_proj', 'down_proj'], seed: 4 });
    const t2 = new LoraTrainer(weights, resumed, { optimizer: { lr: 1e-3 } });
    await t2.step([group]);
    const t3 = new LoraTrainer(weights, resumed, { optimizer: { lr: 1e-3 }, state: structuredClone(t2.state) });
    await t3.step([group]);
    expect(resumed.layers).toEqual(straight.layers);
  });

  it('asks for reference log-probs when the KL term is on', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const trainer = new LoraTrainer(weights, createLoraAdapter(weights.shape, { r: 1 }), { loss: { beta: 0.1 } });
    await expect(trainer.step([{ promptIds: [1], completions: [[2]], advantages: [1] }])).rejects.toThrow(expect.objectContaining({ code: 'InvalidInput' }));
  });
});
