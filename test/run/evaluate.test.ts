/**
 * `evaluate` on the bundled ONNX model and through an OpenAI-compatible server on 127.0.0.1: the
 * per-item samples are the policy's own (seeded, greedy at temperature 0), the scores are the reward
 * functions', the aggregates are recomputed here from the items, pass@k is the unbiased estimator
 * (checked against counting subsets), a library goes into the prompts as a Training-Free run puts
 * it, and bad input gets typed errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortError,
  emptyLibrary,
  evaluate,
  InvalidInputError,
  promptWithLibrary,
  type DatasetItem,
  type ExperienceLibrary,
  type GenerateGroupOptions,
  type GroupResult,
  type Policy,
  type RewardFunction,
} from '../../lib/index.js';
import { arithmetic } from '../../lib/tasks/index.js';
import { generateGroups } from '../../lib/method.js';
import { passAtK } from '../../lib/math.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { openAiPolicy } from '../../lib/openai.js';
import { serve, type WebgrpoServer } from '../../lib/server.js';

let onnx: OnnxPolicy;
let server: WebgrpoServer;
beforeAll(async () => {
  onnx = await loadOnnxPolicy({ model: await bundledModelPath() });
  server = await serve({ policy: onnx, port: 0, host: '127.0.0.1', modelId: 'tiny' });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await onnx?.dispose();
});

/** A policy that answers each prompt with given texts, in order, so the verdicts are known. */
function scripted(answers: Record<string, string[]>): Policy {
  return {
    info: { model: 'scripted', backend: 'test' },
    async generateGroup(options: GenerateGroupOptions): Promise<GroupResult> {
      const texts = answers[options.prompt ?? ''];
      const completions = Array.from({ length: options.groupSize }, (_, i) => ({ text: texts[i % texts.length], tokenIds: [1], logprobs: [-1], finishReason: 'eos' as const }));
      return { promptTokenIds: [1], completions, usage: { promptTokens: 1, completionTokens: options.groupSize } };
    },
    async dispose() {},
  };
}

/** C(n, k) over the integers. */
function choose(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

/** The share of k-subsets of n samples (c correct) that hold a correct one, by counting subsets. */
function passByCounting(n: number, c: number, k: number): number {
  let hit = 0;
  let all = 0;
  for (let mask = 0; mask < 1 << n; mask++) {
    let bits = 0;
    let correct = false;
    for (let i = 0; i < n; i++) if (mask & (1 << i)) (bits++, (correct ||= i < c));
    if (bits !== k) continue;
    all++;
    if (correct) hit++;
  }
  return hit / all;
}

describe('passAtK', () => {
  it('is the unbiased estimator 1 - C(n-c,k)/C(n,k), as counting k-subsets gives it', () => {
    for (let n = 1; n <= 9; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          expect(passAtK(n, c, k)).toBeCloseTo(passByCounting(n, c, k), 12);
          expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
        }
      }
    }
    // Large n, where the binomials themselves would overflow a double.
    expect(passAtK(2000, 1, 1000)).toBeCloseTo(0.5, 12);
  });

  it('rejects counts that are not samples', () => {
    expect(() => passAtK(0, 0, 1)).toThrow(InvalidInputError);
    expect(() => passAtK(4, 5, 1)).toThrow(/c: expected an integer from 0 to n = 4/);
    expect(() => passAtK(4, 1, 5)).toThrow(/k: expected an integer from 1 to n = 4/);
  });
});

describe('evaluate on the bundled model', () => {
  const dataset = arithmetic.dataset({ size: 5, seed: 41 });

  it('samples every item from its own seed, scores each sample with every reward and aggregates them', async () => {
    const progress: number[] = [];
    const result = await evaluate({ policy: onnx, dataset, rewards: arithmetic.rewards, samples: 3, maxNewTokens: 6, seed: 7, batchSize: 2, onProgress: (p) => progress.push(p.done) });
    expect(progress).toEqual([2, 4, 5]);
    expect(result.items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4]);
    for (const item of result.items) {
      expect(item.samples).toHaveLength(3);
      expect(item.answer).toBe(dataset[item.index].answer);
      for (const sample of item.samples) {
        // Each column is the reward function's own score of the text.
        const direct = await Promise.all(arithmetic.rewards.map((r) => r.score({ text: sample.text, completion: { text: sample.text, tokenIds: [], logprobs: [], finishReason: 'eos' }, item: dataset[item.index], prompt: item.prompt, row: 0 })));
        expect(sample.rewards).toEqual(direct);
        const weighted = arithmetic.rewards.reduce((sum, r, k) => sum + (r.weight ?? 1) * (direct[k] as number), 0);
        expect(sample.reward).toBeCloseTo(weighted, 12);
        expect(sample.correct).toBe(sample.text.trim() === String(dataset[item.index].answer));
      }
    }
    const all = result.items.flatMap((i) => i.samples);
    const s = result.summary;
    expect(s).toMatchObject({ items: 5, samples: 3, temperature: 1, greedy: false, judged: 5, rewardNames: ['correct', 'close', 'number_only'] });
    expect(s.meanReward).toBeCloseTo(all.reduce((a, x) => a + (x.reward as number), 0) / all.length, 12);
    expect(s.meanRewards.close).toBeCloseTo(all.reduce((a, x) => a + (x.rewards[1] as number), 0) / all.length, 12);
    expect(s.accuracy).toBe(all.filter((x) => x.correct).length / all.length);
    expect(Object.keys(s.passAtK)).toEqual(['1', '2', '3']);
    expect(s.passAtK['1']).toBeCloseTo(s.accuracy as number, 12);
    expect(s.usage.completionTokens).toBe(all.length > 0 ? s.usage.completionTokens : 0);
    expect(s.usage.completionTokens).toBeGreaterThan(0);

    // The same seed draws the same samples (one engine against itself: bit for bit); the texts are the policy's own group.
    const again = await evaluate({ policy: onnx, dataset, rewards: arithmetic.rewards, samples: 3, maxNewTokens: 6, seed: 7 });
    expect(again).toEqual(result);
    const other = await evaluate({ policy: onnx, dataset, rewards: arithmetic.rewards, samples: 3, maxNewTokens: 6, seed: 8 });
    expect(other.items.map((i) => i.samples.map((x) => x.text))).not.toEqual(result.items.map((i) => i.samples.map((x) => x.text)));
  }, 120_000);

  it('decodes greedily at temperature 0: the policy own greedy answer, through ONNX and through an OpenAI-compatible server alike', async () => {
    const local = await evaluate({ policy: onnx, dataset, rewards: arithmetic.rewards, temperature: 0, maxNewTokens: 6 });
    expect(local.summary).toMatchObject({ greedy: true, samples: 1, temperature: 0 });
    const [first] = await generateGroups(onnx, [{ ...{ messages: dataset[0].messages }, groupSize: 1, maxNewTokens: 6, temperature: 0 }]);
    expect(local.items[0].samples[0].text).toBe(first.completions[0].text);

    const remote = await evaluate({ policy: openAiPolicy({ baseURL: server.url, model: 'tiny' }), dataset, rewards: arithmetic.rewards, temperature: 0, maxNewTokens: 6 });
    expect(remote.items.map((i) => i.samples.map((x) => x.text))).toEqual(local.items.map((i) => i.samples.map((x) => x.text)));
    expect(remote.summary.meanReward).toBe(local.summary.meanReward);
  }, 120_000);

  it('puts an experience library into every prompt as a Training-Free run does', async () => {
    const library: ExperienceLibrary = { ...emptyLibrary(), entries: [{ id: 'G0', text: 'Count on your fingers.', createdStep: 1, updatedStep: 1 }], nextId: 1 };
    const result = await evaluate({ policy: onnx, dataset: dataset.slice(0, 2), rewards: arithmetic.rewards, library, temperature: 0, maxNewTokens: 4 });
    for (const item of result.items) {
      expect(item.prompt).toEqual(promptWithLibrary({ messages: dataset[item.index].messages }, library).prompt);
      expect(item.prompt.messages?.at(-1)?.content).toContain('[G0] Count on your fingers.');
    }
    const base = await evaluate({ policy: onnx, dataset: dataset.slice(0, 2), rewards: arithmetic.rewards, temperature: 0, maxNewTokens: 4 });
    expect(base.items[0].prompt).toEqual({ messages: dataset[0].messages });
  }, 60_000);

  it('stops at an abort', async () => {
    const controller = new AbortController();
    const run = evaluate({ policy: onnx, dataset, rewards: arithmetic.rewards, batchSize: 1, maxNewTokens: 4, signal: controller.signal, onProgress: () => controller.abort() });
    await expect(run).rejects.toBeInstanceOf(AbortError);
  }, 60_000);
});

describe('evaluate verdicts', () => {
  const items: DatasetItem[] = [
    { prompt: 'a', answer: 'Yes' },
    { prompt: 'b', answer: 'no' },
    { prompt: 'c' },
  ];
  // Item a: 1 of 4 right; item b: 3 of 4 right (case and whitespace aside); item c has no answer.
  const policy = scripted({ a: ['yes', 'no', 'no', 'no'], b: [' NO ', 'no', 'maybe', 'no'], c: ['x'] });
  const length: RewardFunction = { name: 'length', score: ({ text }) => text.trim().length };

  it('counts exact matches per item and averages pass@k over the items with an answer', async () => {
    const result = await evaluate({ policy, dataset: items, rewards: [length], samples: 4 });
    expect(result.items.map((i) => i.correct)).toEqual([1, 3, null]);
    expect(result.items[2].samples.every((s) => s.correct === null)).toBe(true);
    expect(result.summary.judged).toBe(2);
    expect(result.summary.accuracy).toBe(4 / 8);
    expect(result.summary.passAtK['1']).toBeCloseTo((0.25 + 0.75) / 2, 12);
    expect(result.summary.passAtK['2']).toBeCloseTo((1 - 3 / 6 + 1) / 2, 12);
    expect(result.summary.passAtK['4']).toBe(1);
  });

  it('judges by a reward function or a predicate instead', async () => {
    const byReward = await evaluate({ policy, dataset: items, rewards: [length], samples: 4, correct: { reward: 'length', atLeast: 3 } });
    expect(byReward.items.map((i) => i.correct)).toEqual([1, 1, 0]);
    const byPredicate = await evaluate({ policy, dataset: items, rewards: [length], samples: 4, correct: ({ text }) => text.includes('o') });
    expect(byPredicate.items.map((i) => i.correct)).toEqual([3, 2, 0]);
  });

  it('keeps unscorable rewards out of the means, as a run does', async () => {
    const some: RewardFunction = { name: 'only-a', score: ({ item }) => (item.prompt === 'a' ? 1 : null) };
    const result = await evaluate({ policy, dataset: items, rewards: [some], samples: 2 });
    expect(result.items.map((i) => i.meanReward)).toEqual([1, null, null]);
    expect(result.summary.meanReward).toBe(1);
    expect(result.summary.meanRewards['only-a']).toBe(1);
  });

  it('rejects bad input with typed errors', async () => {
    const base = { policy, dataset: items, rewards: [length] };
    await expect(evaluate({ ...base, dataset: [] })).rejects.toThrow(/dataset: is empty/);
    await expect(evaluate({ ...base, samples: 0 })).rejects.toThrow(/samples: expected an integer from 1/);
    await expect(evaluate({ ...base, samples: 2, temperature: 0 })).rejects.toThrow(/greedy decoding/);
    await expect(evaluate({ ...base, rewards: [{ name: 'nan', score: () => NaN }] })).rejects.toThrow(/rewards\.nan: returned NaN for item 0, completion 0/);
    await expect(evaluate({ ...base, correct: { reward: 'missing' } })).rejects.toThrow(/correct\.reward: "missing" is not one of the reward functions/);
    await expect(evaluate({ ...base, prompt: () => ({}) })).rejects.toThrow(/prompt: returned \{\} for item 0/);
    await expect(evaluate({ ...base, rewards: [] })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(evaluate({ ...base, correct: () => 1 as unknown as boolean })).rejects.toThrow(/correct: returned 1/);
  });
});
