/**
 * The server on the bundled ONNX model through the official `openai` client: top_logprobs that
 * the policy computes (chat, streamed chat, legacy completions), and concurrent requests batched
 * onto the model's decode steps, each answered as when served alone.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { serve, type WebgrpoServer } from '../../lib/server.js';

let policy: OnnxPolicy;
let server: WebgrpoServer;
let client: OpenAI;
const messages = [{ role: 'user' as const, content: 'Name three fruits.' }];

beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath() });
  server = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'tiny' });
  client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  await policy?.dispose();
});

describe('top_logprobs from the ONNX policy', () => {
  it('answers chat completions with the k most likely tokens per position, as the policy computes them', async () => {
    const response = await client.chat.completions.create({ model: 'tiny', messages, n: 2, seed: 5, temperature: 0.8, max_tokens: 12, logprobs: true, top_logprobs: 3 });
    const expected = await policy.generateGroup({ messages, groupSize: 2, seed: 5, temperature: 0.8, maxNewTokens: 12, topLogprobs: 3 });
    response.choices.forEach((choice, i) => {
      const content = choice.logprobs!.content!;
      expect(content.map((t) => t.logprob)).toEqual(expected.completions[i].logprobs);
      content.forEach((t, j) => {
        expect(t.top_logprobs).toHaveLength(3);
        expect(t.top_logprobs.map((e) => e.logprob)).toEqual(expected.completions[i].topLogprobs![j].map((e) => e.logprob));
      });
    });
  });

  it('streams them: the streamed entries equal the whole response', async () => {
    const params = { model: 'tiny', messages, seed: 6, max_tokens: 10, logprobs: true, top_logprobs: 2 };
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({ ...params, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(whole.choices[0].logprobs!.content);
    expect(streamed.every((t) => t.top_logprobs.length === 2)).toBe(true);
  });

  it('answers legacy completions with logprobs: k as k alternatives per token', async () => {
    const response = await client.completions.create({ model: 'tiny', prompt: 'The sky is', seed: 1, max_tokens: 8, logprobs: 4 });
    const expected = await policy.generateGroup({ prompt: 'The sky is', groupSize: 1, seed: 1, maxNewTokens: 8, topLogprobs: 4 });
    const tops = response.choices[0].logprobs!.top_logprobs!;
    expect(tops).toHaveLength(expected.completions[0].tokenIds.length);
    tops.forEach((alternatives, t) => {
      // Distinct token texts; ids that decode to the same text would merge, which this vocabulary has none of.
      expect(Object.values(alternatives!).sort((a, b) => b - a)).toEqual(expected.completions[0].topLogprobs![t].map((e) => e.logprob));
    });
  });
});

describe('continuous batching', () => {
  it('serves 8 concurrent clients in shared decode steps, each answered as when served alone', async () => {
    const params = (i: number) => ({ model: 'tiny', messages: [{ role: 'user' as const, content: `Request number ${i}${' and more'.repeat(i)}` }], n: 2, seed: i, max_tokens: 16 });
    const alone: OpenAI.ChatCompletion[] = [];
    const passesBefore = policy.stats().forwardPasses;
    for (let i = 0; i < 8; i++) alone.push(await client.chat.completions.create(params(i)));
    const sequentialPasses = policy.stats().forwardPasses - passesBefore;
    const before = policy.stats().forwardPasses;
    const together = await Promise.all(Array.from({ length: 8 }, (_, i) => client.chat.completions.create(params(i))));
    const batchedPasses = policy.stats().forwardPasses - before;
    together.forEach((response, i) => expect(response.choices.map((c) => c.message.content)).toEqual(alone[i].choices.map((c) => c.message.content)));
    expect(batchedPasses).toBeLessThan(sequentialPasses / 2);
  });

  it('queues them one after another with maxBatched: 1', async () => {
    const queued = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'tiny', maxBatched: 1 });
    try {
      const other = new OpenAI({ baseURL: queued.url, apiKey: 'unused', maxRetries: 0 });
      const params = (i: number) => ({ model: 'tiny', messages, n: 2, seed: i, max_tokens: 6, logprobs: true });
      const before = policy.stats().forwardPasses;
      const responses = await Promise.all([0, 1, 2].map((i) => other.chat.completions.create(params(i))));
      // One prefill plus one pass per further token, per request: nothing shared.
      const expected = responses.reduce((n, r) => n + Math.max(...r.choices.map((c) => c.logprobs!.content!.length)), 0);
      expect(policy.stats().forwardPasses - before).toBe(expected);
    } finally {
      await queued.close();
    }
  });
});
