/**
 * What batching keeps, on random request mixes over HTTP (the official `openai` client, the
 * bundled ONNX model). Concurrent requests share decode steps, and rows of prompts of other
 * lengths are padded; padding reorders the float sums in attention, which moves log-probs by about
 * 1e-6. The rule that holds, and is tested here: every completion is the one sampled alone (same
 * seed) token for token, or differs first at a step where both runs had the same distribution to
 * 1e-4, so the shared draw fell that close to a boundary between two tokens; up to that step every
 * log-prob agrees to 1e-4. Prompts of equal length in one batch need no padding and agree exactly.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mulberry32 } from '../../lib/math/random.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { GroupResult } from '../../lib/core/policy.js';
import { serve, type WebgrpoServer } from '../../lib/server.js';

const TOLERANCE = 1e-4;
const ROUNDS = 3;
const REQUESTS = 8;

let policy: OnnxPolicy;
let server: WebgrpoServer;
let client: OpenAI;

beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath() });
  server = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'tiny' });
  client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  await policy?.dispose();
});

type Params = OpenAI.ChatCompletionCreateParamsNonStreaming;

function randomMix(round: number): Params[] {
  const random = mulberry32(9000 + round);
  const pick = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  return Array.from({ length: REQUESTS }, (_, i) => ({
    model: 'tiny',
    messages: [{ role: 'user' as const, content: `Item ${i}:${' more'.repeat(pick(0, 12))}` }],
    n: pick(1, 4),
    seed: pick(0, 10_000),
    max_tokens: pick(8, 24),
    temperature: 0.7 + random() * 0.6,
    logprobs: true,
    top_logprobs: 20,
  }));
}

/** log p of `token` among the alternatives at one position, if it is one of them. */
function alternative(entry: OpenAI.ChatCompletionTokenLogprob, token: string): number | undefined {
  return entry.top_logprobs.find((t) => t.token === token)?.logprob;
}

it('agrees with each request sent alone to the stated rule, over random mixes', async () => {
  let completions = 0;
  let diverged = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const mix = randomMix(round);
    const alone: OpenAI.ChatCompletion[] = [];
    for (const params of mix) alone.push(await client.chat.completions.create(params));
    const together = await Promise.all(mix.map((params) => client.chat.completions.create(params)));
    together.forEach((response, r) => {
      response.choices.forEach((choice, c) => {
        completions++;
        const a = alone[r].choices[c].logprobs!.content!;
        const b = choice.logprobs!.content!;
        const where = `round ${round}, request ${r}, choice ${c}`;
        let t = 0;
        for (; t < Math.min(a.length, b.length) && a[t].token === b[t].token; t++) {
          expect(Math.abs(a[t].logprob - b[t].logprob), `${where}, token ${t}`).toBeLessThanOrEqual(TOLERANCE);
        }
        if (t === a.length && t === b.length) return;
        diverged++;
        // Both ran out of the same prefix with the same draw; the distributions at the step must agree.
        expect(t, `${where}: one is a prefix of the other`).toBeLessThan(Math.min(a.length, b.length));
        const aInB = alternative(b[t], a[t].token);
        const bInA = alternative(a[t], b[t].token);
        expect(aInB !== undefined || bInA !== undefined, `${where}, token ${t}: neither pick is among the other's alternatives`).toBe(true);
        if (aInB !== undefined) expect(Math.abs(aInB - a[t].logprob), where).toBeLessThanOrEqual(TOLERANCE);
        if (bInA !== undefined) expect(Math.abs(bInA - b[t].logprob), where).toBeLessThanOrEqual(TOLERANCE);
      });
    });
  }
  // Divergence needs a draw within 1e-4 of a boundary: rare, never the rule.
  expect(diverged).toBeLessThan(completions / 10);
}, 300_000);

it('is exact for prompts of equal length decoded in one batch', async () => {
  const requests = [0, 1, 2, 3].map((i) => ({ messages: [{ role: 'user' as const, content: `Same length ${i}` }], groupSize: 3, seed: 40 + i, maxNewTokens: 20, temperature: 1 }));
  const alone: GroupResult[] = [];
  for (const request of requests) alone.push(await policy.generateGroup(request));
  const together = await policy.generateGroups(requests);
  together.forEach((group, i) => {
    expect(group.completions.map((c) => c.tokenIds)).toEqual(alone[i].completions.map((c) => c.tokenIds));
    expect(group.completions.map((c) => c.logprobs)).toEqual(alone[i].completions.map((c) => c.logprobs));
  });
});
