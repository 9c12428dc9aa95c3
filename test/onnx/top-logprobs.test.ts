/**
 * top_logprobs with OpenAI's semantics: the k most likely tokens at each position under the
 * temperature-scaled distribution, from generateGroup and scoreCompletions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { topLogprobs } from '../../lib/policy/logits.js';
import { sampleToken } from '../../lib/policy/sampling.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { mulberry32 } from '../../lib/math/random.js';

describe('topLogprobs (one row)', () => {
  it('equals sorting the whole softmax, ties in vocabulary order, for every k up to and past the vocabulary', () => {
    const rng = mulberry32(5);
    for (const vocab of [1, 7, 300]) {
      // Rounded logits make ties common.
      const row = Float32Array.from({ length: vocab + 3 }, () => Math.round((rng() * 6 - 3) * 4) / 4);
      for (const temperature of [0, 0.5, 1.3]) {
        const t = temperature > 0 ? temperature : 1;
        const z = Array.from(row.subarray(3), (x) => x / t);
        const max = Math.max(...z);
        const lse = max + Math.log(z.reduce((s, x) => s + Math.exp(x - max), 0));
        const order = z.map((v, i) => ({ v, i })).sort((a, b) => b.v - a.v || a.i - b.i);
        for (const k of [1, 3, 20]) {
          const top = topLogprobs(row, 3, vocab, k, temperature);
          expect(top.map((e) => e.tokenId)).toEqual(order.slice(0, k).map((e) => e.i));
          top.forEach((e, j) => expect(e.logprob).toBeCloseTo(order[j].v - lse, 10));
        }
      }
    }
  });

  it("gives the sampled token exactly the log-prob sampleToken reports for it", () => {
    const rng = mulberry32(9);
    const row = Float32Array.from({ length: 500 }, () => rng() * 8);
    for (const temperature of [0, 0.8]) {
      const token = sampleToken(row, 0, 500, { temperature, topK: 5, topP: 1, minP: 0 }, rng());
      const entry = topLogprobs(row, 0, 500, 5, temperature).find((e) => e.tokenId === token.tokenId);
      expect(entry?.logprob).toBe(token.logprob);
    }
  });
});

describe('topLogprobs from the ONNX policy', () => {
  let policy: OnnxPolicy;
  beforeAll(async () => {
    policy = await loadOnnxPolicy({ model: await bundledModelPath() });
  });
  afterAll(() => policy?.dispose());

  it('reports k alternatives per generated token that scoring reproduces, the sampled token among them when it ranks', async () => {
    const options = { prompt: 'Alternatives for', groupSize: 3, maxNewTokens: 12, seed: 4, temperature: 0.7, topLogprobs: 5 };
    const events: number[] = [];
    const group = await policy.generateGroup({ ...options, onToken: (e) => events.push(e.topLogprobs!.length) });
    expect(events.every((n) => n === 5)).toBe(true);
    const scored = await policy.scoreCompletions({ prompt: options.prompt, completions: group.completions.map((c) => c.tokenIds), temperature: 0.7, topLogprobs: 5 });
    let ranked = 0;
    group.completions.forEach((c, i) => {
      expect(c.topLogprobs).toHaveLength(c.tokenIds.length);
      c.topLogprobs!.forEach((top, t) => {
        expect(top).toHaveLength(5);
        for (let j = 1; j < top.length; j++) expect(top[j].logprob).toBeLessThanOrEqual(top[j - 1].logprob);
        expect(top.reduce((s, e) => s + Math.exp(e.logprob), 0)).toBeLessThanOrEqual(1 + 1e-9);
        expect(scored.topLogprobs![i][t].map((e) => e.tokenId)).toEqual(top.map((e) => e.tokenId));
        scored.topLogprobs![i][t].forEach((e, j) => expect(Math.abs(e.logprob - top[j].logprob)).toBeLessThan(1e-4));
        const entry = top.find((e) => e.tokenId === c.tokenIds[t]);
        if (c.logprobs[t] > top[4].logprob) expect(entry?.logprob).toBe(c.logprobs[t]);
        if (entry) ranked++;
      });
    });
    expect(ranked).toBeGreaterThan(0);
  });

  it('puts the greedy token first, and leaves the field out unless asked', async () => {
    const greedy = await policy.generateGroup({ prompt: 'Greedy', groupSize: 1, maxNewTokens: 8, temperature: 0, topLogprobs: 2 });
    const c = greedy.completions[0];
    c.topLogprobs!.forEach((top, t) => expect(top[0]).toEqual({ tokenId: c.tokenIds[t], logprob: c.logprobs[t] }));
    const plain = await policy.generateGroup({ prompt: 'Greedy', groupSize: 1, maxNewTokens: 8, temperature: 0 });
    expect(plain.completions[0].topLogprobs).toBeUndefined();
    expect((await policy.scoreCompletions({ prompt: 'x', completions: [[40]] })).topLogprobs).toBeUndefined();
  });

  it('rejects k outside 0..20', async () => {
    await expect(policy.generateGroup({ prompt: 'x', groupSize: 1, maxNewTokens: 1, topLogprobs: 21 })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(policy.scoreCompletions({ prompt: 'x', completions: [[40]], topLogprobs: 1.5 })).rejects.toBeInstanceOf(InvalidInputError);
  });
});
