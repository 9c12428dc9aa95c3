/**
 * Many groups in one batch: generateGroups and concurrent generateGroup calls decode every row of
 * every group in the same forward passes, and each group is the same as when sampled alone: bit
 * for bit beside prompts of its own length; beside longer or shorter ones (a padded batch) the
 * same tokens, texts and finish reasons, with log-probs to 1e-5, because the masked padding
 * positions shift how the runtime's vectorized softmax and matmuls sum a row (about 2e-6 here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { generateGroups } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { replayPolicy, recordingPolicy } from '../../lib/policy/recorded.js';
import type { GenerateGroupOptions, GroupResult } from '../../lib/core/policy.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath() });
});
afterAll(() => policy?.dispose());

// Prompts of different lengths (so the batch pads), settings and group sizes.
const requests: GenerateGroupOptions[] = [
  { prompt: 'A', groupSize: 3, maxNewTokens: 20, seed: 1 },
  { prompt: 'A much longer prompt than the first one, to pad the others', groupSize: 4, maxNewTokens: 14, seed: 2, temperature: 0.7, topK: 30 },
  { messages: [{ role: 'user', content: 'Add 2 and 3.' }], groupSize: 2, maxNewTokens: 24, seed: 3, topP: 0.9, topLogprobs: 3 },
  { prompt: 'Greedy', groupSize: 2, maxNewTokens: 10, temperature: 0 },
];

/** The same group up to log-prob rounding of a padded batch: everything else exactly. */
function expectSameGroup(actual: GroupResult, expected: GroupResult, tolerance = 1e-5): void {
  const strip = (g: GroupResult) => ({ ...g, completions: g.completions.map(({ logprobs, sampledLogprobs, topLogprobs, ...rest }) => rest) });
  expect(strip(actual)).toEqual(strip(expected));
  expected.completions.forEach((c, i) => {
    const other = actual.completions[i];
    c.logprobs.forEach((lp, t) => expect(Math.abs(lp - other.logprobs[t])).toBeLessThan(tolerance));
    c.sampledLogprobs!.forEach((lp, t) => expect(Math.abs(lp - other.sampledLogprobs![t])).toBeLessThan(tolerance));
    c.topLogprobs?.forEach((top, t) => expect(other.topLogprobs![t].map((e) => e.tokenId)).toEqual(top.map((e) => e.tokenId)));
  });
}

describe('generateGroups', () => {
  it('gives a group bit for bit what it gets alone when the prompts are as long as its own', async () => {
    const a = { prompt: 'Abcd', groupSize: 3, maxNewTokens: 20, seed: 1, topLogprobs: 2 };
    const b = { prompt: 'Wxyz', groupSize: 4, maxNewTokens: 20, seed: 2, temperature: 0.6 };
    const [alone, other] = [await policy.generateGroup(a), await policy.generateGroup(b)];
    expect(await policy.generateGroups([a, b])).toEqual([alone, other]);
    expect(await policy.generateGroups([b, a, b])).toEqual([other, alone, other]);
  });

  it('gives each group what it gets alone beside longer and shorter prompts, in any order', async () => {
    const alone: GroupResult[] = [];
    for (const r of requests) alone.push(await policy.generateGroup(r));
    const batched = await policy.generateGroups(requests);
    batched.forEach((g, i) => expectSameGroup(g, alone[i]));
    const shuffled = await policy.generateGroups([requests[2], { prompt: 'Other', groupSize: 5, maxNewTokens: 30, seed: 9 }, requests[0]]);
    expectSameGroup(shuffled[0], alone[2]);
    expectSameGroup(shuffled[2], alone[0]);
  });

  it('prefills each prompt once and decodes all rows together, one pass per step', async () => {
    const before = policy.stats().forwardPasses;
    const groups = await policy.generateGroups(requests);
    const longest = Math.max(...groups.flatMap((g) => g.completions.map((c) => c.tokenIds.length)));
    expect(policy.stats().forwardPasses - before).toBe(requests.length + longest - 1);
  });

  it('lets a concurrent generateGroup call join the running batch between steps', async () => {
    const first = { prompt: 'Running', groupSize: 2, maxNewTokens: 30, seed: 4 };
    const second = { prompt: 'Joining later', groupSize: 2, maxNewTokens: 10, seed: 5 };
    const [aloneA, aloneB] = [await policy.generateGroup(first), await policy.generateGroup(second)];
    const before = policy.stats().forwardPasses;
    let joined: Promise<unknown> | undefined;
    const a = policy.generateGroup({
      ...first,
      onToken: (e) => {
        if (e.row === 0 && !joined) joined = policy.generateGroup(second); // after the first token
      },
    });
    const ra = await a;
    const rb = (await joined) as GroupResult;
    const separate = [aloneA, aloneB].reduce((n, g) => n + Math.max(...g.completions.map((c) => c.tokenIds.length)), 0);
    expect(policy.stats().forwardPasses - before).toBeLessThan(separate);
    expectSameGroup(ra, aloneA);
    expectSameGroup(rb, aloneB);
  });

  it('keeps the rows in flight under maxBatchRows: groups that do not fit wait their turn', async () => {
    const capped = await loadOnnxPolicy({ model: await bundledModelPath(), maxBatchRows: 4 });
    try {
      const groups = [0, 1, 2].map((i) => ({ prompt: `Capped ${i}`, groupSize: 3, maxNewTokens: 6, seed: i }));
      const before = capped.stats().forwardPasses;
      const results = await capped.generateGroups(groups);
      const passes = capped.stats().forwardPasses - before;
      // No two groups of 3 fit in 4 rows: each runs after the previous one ended.
      expect(passes).toBe(results.reduce((n, g) => n + Math.max(...g.completions.map((c) => c.tokenIds.length)), 0));
      // One group at a time: nothing padded, so bit for bit.
      for (const [i, g] of groups.entries()) expect(results[i]).toEqual(await policy.generateGroup(g));
    } finally {
      await capped.dispose();
    }
  });

  it('aborts one group without disturbing the others', async () => {
    const controller = new AbortController();
    let seen = 0;
    const [a, b] = await policy.generateGroups([
      { ...requests[0], signal: controller.signal, onToken: () => ++seen === 4 && controller.abort() },
      requests[1],
    ]);
    expect(a.completions.some((c) => c.finishReason === 'abort')).toBe(true);
    expectSameGroup(b, await policy.generateGroup(requests[1]));
  });

  it('rejects an empty list and a bad request before running any', async () => {
    await expect(policy.generateGroups([])).rejects.toBeInstanceOf(InvalidInputError);
    const before = policy.stats().forwardPasses;
    await expect(policy.generateGroups([requests[0], { ...requests[0], groupSize: 0 }])).rejects.toMatchObject({ argument: 'groupSize' });
    expect(policy.stats().forwardPasses).toBe(before);
  });
});

describe('generateGroups(policy, requests)', () => {
  it('uses the batch where the policy has one and samples one group after another where not', async () => {
    const recorder = recordingPolicy(policy);
    const viaHelper = await generateGroups(policy, requests.slice(0, 2));
    expect(viaHelper).toEqual(await policy.generateGroups(requests.slice(0, 2)));
    // A policy without generateGroups (a replay of recorded calls) gets them in order.
    const recorded = [];
    for (const r of requests.slice(0, 2)) recorded.push(await recorder.generateGroup(r));
    const replay = replayPolicy(recorder.recording());
    expect(replay.generateGroups).toBeUndefined();
    expect(await generateGroups(replay, requests.slice(0, 2))).toEqual(recorded);
    expect(await generateGroups(replay, [])).toEqual([]);
  });
});
