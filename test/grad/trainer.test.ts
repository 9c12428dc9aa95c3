/**
 * GrpoTrainer on the bundled model (CPU engine): the reference is the base model from the same
 * forward pass, equal to scoring with a separate base policy; further updates on a batch reuse the
 * frozen model's states (no forward pass) while the old log-probs stay the batch's; the adapter
 * starts at zero (B = 0: the first update's adapted log-probs are the base model's); bad input
 * fails with typed errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpoTrainer, groupRolloutBatch, headEngine, rolloutSampling, type RolloutGroup } from '../../lib/grad.js';
import { InvalidInputError } from '../../lib/index.js';
import { GrpoConfig } from '../../lib/math.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { PromptInput } from '../../lib/core/policy.js';

let policy: OnnxPolicy;
let base: OnnxPolicy;
let batch: ReturnType<typeof groupRolloutBatch>;
const prompts: PromptInput[] = [{ prompt: 'Answer with digits only.' }, { messages: [{ role: 'user', content: 'Reply in CAPITALS.' }] }];

beforeAll(async () => {
  const model = await bundledModelPath();
  [policy, base] = await Promise.all([loadOnnxPolicy({ model, hiddenState: true }), loadOnnxPolicy({ model })]);
  const groups = [];
  for (const [i, prompt] of prompts.entries()) {
    const group = await base.generateGroup({ ...prompt, groupSize: 4, maxNewTokens: 10, seed: i, temperature: 0.9 });
    groups.push({ completions: group.completions, rewards: [0.2, 0.9, 0.5, 0.1] });
  }
  batch = groupRolloutBatch(groups);
});
afterAll(async () => {
  await Promise.all([policy?.dispose(), base?.dispose()]);
});

const config = new GrpoConfig({ numGenerations: 4, beta: 0.05, entropyCoeff: 0.01 });

describe('GrpoTrainer', () => {
  it('starts at the base model: the first update sees ratio 1 and zero KL', async () => {
    const trainer = new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0.9 });
    try {
      const { loss, metrics } = await trainer.trainStep(batch, prompts);
      expect(metrics.kl).toBeCloseTo(0, 12);
      expect(metrics.clipRatioRegion).toBe(0);
      expect(loss).toBeCloseTo(metrics.loss, 15);
      expect(metrics.tokens).toBe(batch.rollout.responseMask.flat().filter(Boolean).length);
      expect(metrics.gradNorm).toBeGreaterThan(0);
      expect(metrics.step).toBe(1);
    } finally {
      trainer.dispose();
    }
  });

  it('reuses the frozen model\'s states on the same batch and keeps its old log-probs', async () => {
    const trainer = new GrpoTrainer(headEngine(policy), { lr: 0.05 }, config, { temperature: 0.9 });
    try {
      await trainer.trainStep(batch, prompts);
      const passes = policy.stats().forwardPasses;
      const second = await trainer.trainStep(batch, prompts);
      expect(policy.stats().forwardPasses).toBe(passes);
      // The adapter moved, the old log-probs did not: ratios leave 1, the KL grows from 0.
      expect(second.metrics.kl).toBeGreaterThan(1e-6);
      expect(second.metrics.step).toBe(2);
      // A new batch object (even with the same content) runs the model again.
      await trainer.trainStep(groupRolloutBatch([0, 1].map((g) => ({ completions: batch.rollout.sequences.slice(4 * g, 4 * g + 4).map(() => ({ tokenIds: [7, 8], logprobs: [-4, -4] })), rewards: [0, 1, 0, 1] }))), prompts);
      expect(policy.stats().forwardPasses).toBeGreaterThan(passes);
    } finally {
      trainer.dispose();
    }
  });

  it('a separate reference policy (the base model) gives the same KL as the built-in reference', async () => {
    const run = async (reference: 'base' | OnnxPolicy) => {
      const trainer = new GrpoTrainer(headEngine(policy, { adapter: { seed: 4 } }), { lr: 0.05 }, config, { temperature: 0.9, reference });
      try {
        await trainer.trainStep(batch, prompts);
        return (await trainer.trainStep(batch, prompts)).metrics;
      } finally {
        trainer.dispose();
      }
    };
    const builtIn = await run('base');
    const separate = await run(base);
    expect(builtIn.kl).toBeGreaterThan(0);
    // The built-in reference is the head graphs' float32 log-softmax, the separate one the scoring
    // pass's float64 one over the same logits: they agree to float32 rounding.
    expect(separate.kl).toBeCloseTo(builtIn.kl!, 6);
    expect(separate.loss).toBeCloseTo(builtIn.loss, 6);
  });

  it('restores a saved state exactly, and takes its adapter off the policy when disposed', async () => {
    const a = new GrpoTrainer(headEngine(policy), {}, config);
    await a.trainStep(batch, prompts);
    const state = await a.state();
    const exported = await a.engine.exportAdapter();
    a.dispose();
    expect(policy.head!.adapter).toBeUndefined();
    const b = new GrpoTrainer(headEngine(policy), {}, config);
    try {
      b.load(state);
      expect(await b.state()).toEqual(state);
      expect((await b.engine.exportAdapter()).b).toBe(exported.b);
      expect(() => b.load({ ...state, a: new Float32Array(3) })).toThrow(/state\.a/);
    } finally {
      b.dispose();
    }
  });

  it('corrects for a filtered sampler by default: sequence ratios exp(sum(logprobs - sampledLogprobs)), masked above 3', async () => {
    const groups: RolloutGroup[] = [];
    for (const [i, prompt] of prompts.entries()) {
      const group = await base.generateGroup({ ...prompt, groupSize: 4, maxNewTokens: 6, seed: 10 + i, temperature: 0.9, topK: 3 });
      groups.push({ completions: group.completions, rewards: [0.2, 0.9, 0.5, 0.1] });
    }
    const filtered = groupRolloutBatch(groups);
    const extras = rolloutSampling(groups);
    const trainer = new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0.9 });
    try {
      await expect(trainer.trainStep(filtered, prompts, { sampling: { temperature: 0.9, topK: 3 } })).rejects.toThrow(/samplingLogprobs/);
      const { metrics } = await trainer.trainStep(filtered, prompts, { sampling: { temperature: 0.9, topK: 3 }, ...extras });
      // The filter only removes mass, so each token's sampled log-prob is >= its unfiltered one.
      const ratios = groups
        .flatMap((g) => g.completions)
        .map((c) => Math.exp(c.logprobs.reduce((a, lp, t) => a + lp - c.sampledLogprobs![t], 0)))
        .map((r) => (r > 3 ? 0 : r));
      expect(Math.max(...ratios)).toBeLessThanOrEqual(1);
      expect(metrics.importanceSamplingRatio!.min).toBeCloseTo(Math.min(...ratios), 12);
      expect(metrics.importanceSamplingRatio!.mean).toBeCloseTo(ratios.reduce((a, b) => a + b, 0) / ratios.length, 12);
      // The same sampler without a filter needs no correction.
      const plain = await trainer.trainStep(batch, prompts, { sampling: { temperature: 0.9 } });
      expect(plain.metrics.importanceSamplingRatio).toBeUndefined();
    } finally {
      trainer.dispose();
    }
  });

  it('masks truncated completions out of the loss and out of the token count it divides by (TRL counts num_items_in_batch after masking)', async () => {
    const truncated = [true, false, false, false, false, false, false, true];
    const run = async (mask: boolean) => {
      const trainer = new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0.9, maskTruncatedCompletions: mask });
      try {
        return (await trainer.trainStep(batch, prompts, { truncated })).metrics;
      } finally {
        trainer.dispose();
      }
    };
    const all = batch.rollout.responseMask.map((row) => Array.from(row).filter(Boolean).length);
    const masked = await run(true);
    const kept = await run(false);
    expect(kept.tokens).toBe(all.reduce((a, b) => a + b, 0));
    expect(masked.tokens).toBe(all.reduce((a, b, i) => a + (truncated[i] ? 0 : b), 0));
    expect(masked.loss).not.toBeCloseTo(kept.loss, 6);
    // Their rewards still shape the group's advantages.
    expect(masked.advantageMean).toBeCloseTo(kept.advantageMean, 12);
    const trainer = new GrpoTrainer(headEngine(policy), {}, config, { maskTruncatedCompletions: true });
    await expect(trainer.trainStep(batch, prompts)).rejects.toThrow(/truncated/);
    trainer.dispose();
  });

  it('adapts the entropy coefficient across steps (TRL use_adaptive_entropy)', async () => {
    const up = new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0.9, adaptiveEntropy: { target: 100, delta: 0.005 } });
    const down = new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0.9, adaptiveEntropy: { target: 0, delta: 0.004 } });
    try {
      // No bonus before a measurement; then it applies while entropy stays at or below the target.
      const first = await up.trainStep(batch, prompts);
      expect(first.metrics.policyLoss).toBeUndefined();
      expect(first.metrics.entropyCoef).toBeCloseTo(0.015, 15);
      const second = await up.trainStep(batch, prompts);
      expect(second.metrics.policyLoss! - second.loss).toBeCloseTo(0.015 * second.metrics.entropy, 9);
      expect(second.metrics.entropyCoef).toBeCloseTo(0.02, 15);
      expect((await down.trainStep(batch, prompts)).metrics.entropyCoef).toBeCloseTo(0.006, 15);
      // Entropy above the target: still no bonus, and the coefficient keeps falling.
      const low = await down.trainStep(batch, prompts);
      expect(low.metrics.policyLoss).toBeUndefined();
      expect(low.metrics.entropyCoef).toBeCloseTo(0.002, 15);
    } finally {
      up.dispose();
      down.dispose();
    }
  });

  it('refuses what it cannot train, with typed errors', async () => {
    expect(() => new GrpoTrainer(headEngine(base), {}, config)).toThrow(/hiddenState: true/);
    expect(() => new GrpoTrainer(headEngine(policy), { maxGradNorm: -1 }, config)).toThrow(InvalidInputError);
    expect(() => new GrpoTrainer(headEngine(policy), {}, config, { temperature: 0 })).toThrow(/temperature/);
    expect(() => new GrpoTrainer(headEngine(policy), {}, config, { reference: {} as never })).toThrow(/reference/);
    const trainer = new GrpoTrainer(headEngine(policy), {}, config);
    try {
      await expect(trainer.trainStep(batch, prompts.slice(0, 1))).rejects.toThrow(/one prompt per group/);
      const other = new GrpoTrainer(headEngine(policy), {}, { numGenerations: 2 });
      await expect(other.trainStep(batch, prompts)).rejects.toThrow(/numGenerations/);
      other.dispose();
      const aborted = AbortSignal.abort();
      await expect(trainer.trainStep(groupRolloutBatch([{ completions: batch.rollout.sequences.slice(0, 4).map(() => ({ tokenIds: [9], logprobs: [-4] })), rewards: [0, 1, 0, 1] }, { completions: batch.rollout.sequences.slice(0, 4).map(() => ({ tokenIds: [9], logprobs: [-4] })), rewards: [0, 1, 0, 1] }]), prompts, { signal: aborted })).rejects.toThrow(/aborted/);
    } finally {
      trainer.dispose();
    }
    await expect(trainer.trainStep(batch, prompts)).rejects.toThrow(/disposed/);
  });
});
