/**
 * GrpoTrainer over the LoRA engine on the bundled model (`trainStep(groupRolloutBatch, prompts) ->
 * { loss, metrics }`): it starts at the base model (zero KL, ratio 1), learns toward the positive
 * advantages, trains with the entropy bonus and the sampling correction, and the one trainer runs
 * over both engines (the head adapter's and full-depth LoRA's graphs on onnxruntime).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpoTrainer, groupRolloutBatch, headEngine, rolloutSampling } from '../../lib/grad.js';
import { GrpoConfig } from '../../lib/math.js';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { loraEngine, loraModel, type LoraModel } from '../../lib/train/lora-engine.js';
import { graphLogprobs } from './graph-logprobs.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { PromptInput } from '../../lib/core/policy.js';
import { TINY_DIR } from '../onnx/fixtures.js';

let policy: OnnxPolicy;
let base: LoraModel;
let batch: ReturnType<typeof groupRolloutBatch>;
let sampling: ReturnType<typeof rolloutSampling>;
const prompts: PromptInput[] = [{ prompt: 'Count: 1 2' }, { messages: [{ role: 'user', content: 'Reply in CAPITALS.' }] }];
const rewards = [0.1, 0.9, 0.4, 0.2];

beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR, hiddenState: true });
  base = await loraModel(policy, { r: 2, seed: 3 });
  const groups = [];
  for (const [i, prompt] of prompts.entries()) {
    const group = await policy.generateGroup({ ...prompt, groupSize: 4, maxNewTokens: 8, seed: i, temperature: 0.9 });
    groups.push({ completions: group.completions, rewards });
  }
  batch = groupRolloutBatch(groups);
  sampling = rolloutSampling(groups);
});
afterAll(() => policy?.dispose());

/** A fresh adapter of the same seed on the same weights. */
const fresh = (seed = 3): LoraModel => ({ ...base, adapter: createLoraAdapter(base.weights.shape, { r: 2, seed }) });

describe('GrpoTrainer over the LoRA engine', () => {
  it('starts at the base model: zero KL, no clipping, the sampled log-probs to 1e-5', async () => {
    const model = fresh();
    const trainer = new GrpoTrainer(loraEngine(model), { lr: 1e-3 }, new GrpoConfig({ numGenerations: 4, beta: 0.05 }), { temperature: 0.9 });
    const { loss, metrics } = await trainer.trainStep(batch, prompts);
    expect(metrics.kl).toBe(0);
    expect(metrics.clipRatioRegion).toBe(0);
    expect(loss).toBe(metrics.loss);
    expect(metrics.tokens).toBe(batch.rollout.responseMask.flat().filter(Boolean).length);
    expect(metrics.gradNorm).toBeGreaterThan(0);
    expect(metrics.step).toBe(1);
    // The sampler's log-probs (the batch's old ones) are the training forward's.
    const ids = policy.promptIds(prompts[0]);
    const row = batch.rollout.sequences[0];
    const length = Array.from(batch.rollout.responseMask[0]).filter(Boolean).length;
    const tokens = Array.from(row).slice(0, length).map(Number);
    const [ours] = await graphLogprobs(model.weights, createLoraAdapter(model.weights.shape, { r: 2, seed: 3 }), { promptIds: ids, completions: [tokens] }, 0.9);
    ours.forEach((lp, t) => expect(Math.abs(lp - Number(batch.rollout.oldLogProbs[0][t]))).toBeLessThan(1e-5));
  });

  it('raises the log-probs of the completions with positive advantage', async () => {
    const model = fresh();
    const trainer = new GrpoTrainer(loraEngine(model), { lr: 5e-3 }, new GrpoConfig({ numGenerations: 4, beta: 0.01, entropyCoeff: 0.01 }), {
      temperature: 0.9,
      adaptiveEntropy: { target: 1 },
    });
    const score = async (row: number) => {
      const ids = policy.promptIds(prompts[Math.floor(row / 4)]);
      const n = Array.from(batch.rollout.responseMask[row]).filter(Boolean).length;
      const tokens = Array.from(batch.rollout.sequences[row]).slice(0, n).map(Number);
      const [logps] = await graphLogprobs(model.weights, model.adapter, { promptIds: ids, completions: [tokens] }, 0.9);
      return logps.reduce((x, y) => x + y, 0);
    };
    const scores = (rows: number[]) => Promise.all(rows.map(score));
    // Row 1 of each group has the highest reward (0.9), row 2 the mean one (0.4).
    const before = await scores([1, 2, 5, 6]);
    const losses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { loss, metrics } = await trainer.trainStep(batch, prompts, { sampling: { temperature: 0.9, topK: 5 }, ...sampling });
      losses.push(loss);
      expect(metrics.importanceSamplingRatio).toBeDefined();
      expect(metrics.adaptiveEntropy).toBeDefined();
    }
    const after = await scores([1, 2, 5, 6]);
    expect(after[0]).toBeGreaterThan(before[0]);
    expect(after[2]).toBeGreaterThan(before[2]);
    expect(losses[3]).toBeLessThan(losses[0]);
    expect(trainer.engine.updates).toBe(4);
  });

  it('is the same trainer over the head adapter\'s engine and the LoRA engine', async () => {
    const config = new GrpoConfig({ numGenerations: 4 });
    const head = new GrpoTrainer(headEngine(policy), { lr: 0.01 }, config, { temperature: 0.9 });
    try {
      const trainers: GrpoTrainer[] = [head, new GrpoTrainer(loraEngine(fresh()), { lr: 1e-3 }, config, { temperature: 0.9 })];
      for (const trainer of trainers) {
        const { loss, metrics } = await trainer.trainStep(batch, prompts);
        expect(Number.isFinite(loss)).toBe(true);
        expect(metrics.step).toBe(1);
        expect(metrics.tokens).toBeGreaterThan(0);
      }
    } finally {
      head.dispose();
    }
  });

  it('refuses a batch of another group size and a prompt count that does not match', async () => {
    const trainer = new GrpoTrainer(loraEngine(fresh()), {}, new GrpoConfig({ numGenerations: 8 }));
    await expect(trainer.trainStep(batch, prompts)).rejects.toMatchObject({ code: 'InvalidInput' });
    const four = new GrpoTrainer(loraEngine(fresh()), {}, new GrpoConfig({ numGenerations: 4 }));
    await expect(four.trainStep(batch, [prompts[0]])).rejects.toMatchObject({ code: 'InvalidInput' });
    expect(() => loraEngine({} as LoraModel)).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
  });

  it("refuses graphs built from other weights; trains on onnxruntime's kernels", () => {
    const model = fresh();
    expect(() => loraEngine(model, { graph: { weights: { ...model.weights } } as never })).toThrow(/graph: was built from other weights/);
    const engine = loraEngine(model);
    expect(engine.backend).toBe('onnxruntime');
    engine.dispose();
  });
});
