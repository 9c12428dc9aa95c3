/**
 * The official `openai` npm client, unmodified, against `serve()` on the deterministic toy
 * policy. The same checks run against the bundled ONNX model in cli-e2e.test.ts.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeAdvantages } from '../../lib/math/advantages.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { startToyServer, type ToyServer } from './helpers.js';

let toy: ToyServer;
let client: OpenAI;
const reference = createToyPolicy();
const messages = [{ role: 'user' as const, content: 'Name three fruits.' }];

beforeAll(async () => {
  toy = await startToyServer({ apiKey: 'sk-local' });
  client = new OpenAI({ baseURL: toy.url, apiKey: 'sk-local', maxRetries: 0 });
});
afterAll(() => toy.server.close());

describe('official openai client', () => {
  it('lists the model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['toy']);
  });

  it('creates chat completions with n > 1, seed and log-probs', async () => {
    const response = await client.chat.completions.create({
      model: 'toy',
      messages,
      n: 3,
      seed: 123,
      temperature: 0.8,
      max_completion_tokens: 24,
      logprobs: true,
      top_logprobs: 2,
    });
    const expected = await reference.generateGroup({ messages, groupSize: 3, seed: 123, temperature: 0.8, maxNewTokens: 24, topLogprobs: 2 });
    expect(response.choices.map((c) => c.message.content)).toEqual(expected.completions.map((c) => c.text));
    expect(response.choices.map((c) => c.logprobs!.content!.map((t) => t.logprob))).toEqual(expected.completions.map((c) => c.logprobs));
    expect(response.choices[0].logprobs!.content![0].top_logprobs).toHaveLength(2);
    expect(response.usage?.completion_tokens).toBe(expected.usage.completionTokens);
  });

  it('streams a chat completion', async () => {
    const params = { model: 'toy', messages, seed: 7, max_tokens: 30 };
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(whole.choices[0].message.content);
    expect(finish).toBe(whole.choices[0].finish_reason);
    expect(usage).toEqual(whole.usage);
  });

  it('streams n > 1 choices through the SDK helper', async () => {
    const params = { model: 'toy', messages, seed: 8, n: 2, max_tokens: 20 };
    const whole = await client.chat.completions.create(params);
    const final = await client.chat.completions.stream(params).finalChatCompletion();
    expect(final.choices.map((c) => c.message.content)).toEqual(whole.choices.map((c) => c.message.content));
  });

  it('creates legacy completions', async () => {
    const response = await client.completions.create({ model: 'toy', prompt: 'The sky is', n: 2, seed: 1, max_tokens: 10, logprobs: 1 });
    const expected = await reference.generateGroup({ prompt: 'The sky is', groupSize: 2, seed: 1, maxNewTokens: 10, topLogprobs: 1 });
    expect(response.choices.map((c) => c.text)).toEqual(expected.completions.map((c) => c.text));
    expect(response.choices[0].logprobs!.token_logprobs).toEqual(expected.completions[0].logprobs);
  });

  it('raises the SDK error classes for bad requests and bad keys', async () => {
    const error = await client.chat.completions.create({ model: 'toy', messages, n: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');
    const missing = await client.chat.completions.create({ model: 'gpt-9', messages }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    const stranger = new OpenAI({ baseURL: toy.url, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('sends feedback on a response id through the same client', async () => {
    const response = await client.chat.completions.create({ model: 'toy', messages, n: 4, seed: 5, max_tokens: 12 });
    const rewards = response.choices.map((c) => (c.message.content ?? '').length % 3);
    const told = await client.post<{ groups: { completions: { advantage: number }[] }[] }>('/feedback', {
      body: { group_id: response.id, rewards },
    });
    expect(told.groups[0].completions.map((c) => c.advantage)).toEqual(computeAdvantages(rewards, { groupSize: 4 }).advantages);
  });

  it('serves many concurrent SDK clients', async () => {
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        new OpenAI({ baseURL: toy.url, apiKey: 'sk-local', maxRetries: 0 }).chat.completions.create({
          model: 'toy',
          messages: [{ role: 'user', content: `client ${i}` }],
          n: 2,
          seed: i,
          max_tokens: 12,
        }),
      ),
    );
    for (const [i, response] of results.entries()) {
      const expected = await reference.generateGroup({ messages: [{ role: 'user', content: `client ${i}` }], groupSize: 2, seed: i, maxNewTokens: 12 });
      expect(response.choices.map((c) => c.message.content)).toEqual(expected.completions.map((c) => c.text));
    }
  });
});
