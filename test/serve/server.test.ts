import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeAdvantages } from '../../lib/math/advantages.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { parseSse, post, startToyServer, type ToyServer } from './helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

const messages = [{ role: 'user', content: 'Alphabetise: pear, apple, fig' }];
let toy: ToyServer;
const reference = createToyPolicy();

beforeAll(async () => {
  toy = await startToyServer();
});
afterAll(() => toy.server.close());

describe('GET endpoints', () => {
  it('reports health and lists the one model', async () => {
    const health = await (await fetch(`${toy.url.replace(/\/v1$/, '')}/health`)).json();
    expect(health).toEqual({
      status: 'ok',
      model: 'toy',
      queue: { running: 0, pending: 0 },
      groups: { stored: expect.any(Number), bytes: expect.any(Number), max_bytes: expect.any(Number), evicted: 0 },
    });
    const models = await (await fetch(`${toy.url}/models`)).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'toy', object: 'model', owned_by: 'webgrpo' }] });
    expect((await (await fetch(`${toy.url}/models/toy`)).json()).id).toBe('toy');
    const missing = await fetch(`${toy.url}/models/gpt-4`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe('model_not_found');
  });
});

describe('POST /v1/chat/completions', () => {
  it('samples n choices with the seed, and reports log-probs and top log-probs', async () => {
    const body = { model: 'toy', messages, n: 3, seed: 42, temperature: 0.9, max_tokens: 30, logprobs: true, top_logprobs: 3 };
    const res = await post(`${toy.url}/chat/completions`, body);
    expect(res.status).toBe(200);
    const json: Json = await res.json();
    expect(json).toMatchObject({ object: 'chat.completion', model: 'toy' });
    expect(json.id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);

    const expected = await reference.generateGroup({ messages: messages as never, groupSize: 3, seed: 42, temperature: 0.9, maxNewTokens: 30, topLogprobs: 3 });
    expect(json.choices).toHaveLength(3);
    json.choices.forEach((choice: Json, i: number) => {
      const c = expected.completions[i];
      expect(choice.index).toBe(i);
      expect(choice.message).toMatchObject({ role: 'assistant', content: c.text });
      expect(choice.finish_reason).toBe(c.finishReason === 'length' ? 'length' : 'stop');
      const content = choice.logprobs.content;
      expect(content.map((t: Json) => t.logprob)).toEqual(c.logprobs);
      expect(content.map((t: Json) => t.token).join('')).toBe(c.text);
      for (const [t, entry] of content.entries()) {
        expect(entry.bytes).toEqual([...new TextEncoder().encode(entry.token)]);
        expect(entry.top_logprobs).toHaveLength(3);
        expect(entry.top_logprobs.map((a: Json) => a.logprob)).toEqual(c.topLogprobs![t].map((a) => a.logprob));
        expect(entry.top_logprobs[0].logprob).toBeGreaterThanOrEqual(entry.top_logprobs[2].logprob);
      }
    });
    const completionTokens = expected.completions.reduce((s, c) => s + c.tokenIds.length, 0);
    expect(json.usage).toEqual({ prompt_tokens: expected.promptTokenIds.length, completion_tokens: completionTokens, total_tokens: expected.promptTokenIds.length + completionTokens });

    const again: Json = await (await post(`${toy.url}/chat/completions`, body)).json();
    expect(again.choices.map((c: Json) => c.message.content)).toEqual(json.choices.map((c: Json) => c.message.content));
    expect(again.id).not.toBe(json.id);
    const other: Json = await (await post(`${toy.url}/chat/completions`, { ...body, seed: 43 })).json();
    expect(other.choices.map((c: Json) => c.message.content)).not.toEqual(json.choices.map((c: Json) => c.message.content));
  });

  it('ends at stop strings without returning them, and returns token ids on request', async () => {
    const body = { model: 'toy', messages, n: 4, seed: 5, max_tokens: 60, stop: ['e', 'a'], return_token_ids: true };
    const json: Json = await (await post(`${toy.url}/chat/completions`, body)).json();
    const expected = await reference.generateGroup({ messages: messages as never, groupSize: 4, seed: 5, maxNewTokens: 60, stop: ['e', 'a'] });
    expect(json.choices.map((c: Json) => c.message.content)).toEqual(expected.completions.map((c) => c.text));
    expect(json.choices.some((c: Json) => c.finish_reason === 'stop')).toBe(true);
    for (const c of json.choices) expect(c.message.content).not.toMatch(/[ea]/);
    expect(json.choices.map((c: Json) => c.token_ids)).toEqual(expected.completions.map((c) => c.tokenIds));
    expect(json.prompt_token_ids).toEqual(expected.promptTokenIds);
  });

  it('streams every choice as it is sampled, holding back text that could start a stop string', async () => {
    // A two-character stop string that row 0 is known to produce: the case where streaming must
    // hold text back (its first character arrives one token before the stop is complete).
    const free = await reference.generateGroup({ messages: messages as never, groupSize: 3, seed: 0, maxNewTokens: 40 });
    const stop = free.completions[0].text.slice(8, 10);
    const body = { model: 'toy', messages, n: 3, seed: 0, max_tokens: 40, stop: [stop, 'z!q'], logprobs: true, top_logprobs: 2 };
    const whole: Json = await (await post(`${toy.url}/chat/completions`, body)).json();
    expect(whole.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: free.completions[0].text.slice(0, 8) } });
    const res = await post(`${toy.url}/chat/completions`, { ...body, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text()) as Json[];
    expect(events.at(-1)).toBe('[DONE]');
    const usage = events.at(-2);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual(whole.usage);
    const chunks = events.slice(0, -2);
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ id: usage.id, object: 'chat.completion.chunk', model: 'toy', usage: null });
      expect(chunk.choices).toHaveLength(1);
    }
    for (let i = 0; i < 3; i++) {
      const mine = chunks.filter((c) => c.choices[0].index === i).map((c) => c.choices[0]);
      expect(mine[0].delta.role).toBe('assistant');
      const text = mine.map((c) => c.delta.content ?? '').join('');
      expect(text).toBe(whole.choices[i].message.content);
      // Streamed text is final: no chunk ever carried text past a stop string.
      let sent = '';
      for (const c of mine) {
        sent += c.delta.content ?? '';
        expect(whole.choices[i].message.content.startsWith(sent)).toBe(true);
      }
      const tokens = mine.flatMap((c) => c.logprobs?.content ?? []);
      expect(tokens).toEqual(whole.choices[i].logprobs.content);
      expect(mine.at(-1).finish_reason).toBe(whole.choices[i].finish_reason);
      expect(mine.slice(0, -1).every((c) => c.finish_reason === null)).toBe(true);
    }
  });
});

describe('POST /v1/completions', () => {
  it('completes raw text with legacy log-probs, whole and streamed', async () => {
    const prompt = 'Once upon a time';
    const body = { model: 'toy', prompt, n: 2, seed: 3, max_tokens: 20, logprobs: 2, temperature: 0.7 };
    const json: Json = await (await post(`${toy.url}/completions`, body)).json();
    expect(json.object).toBe('text_completion');
    expect(json.id).toMatch(/^cmpl-/);
    const expected = await reference.generateGroup({ prompt, groupSize: 2, seed: 3, maxNewTokens: 20, temperature: 0.7, topLogprobs: 2 });
    json.choices.forEach((choice: Json, i: number) => {
      const c = expected.completions[i];
      expect(choice.text).toBe(c.text);
      expect(choice.logprobs.token_logprobs).toEqual(c.logprobs);
      expect(choice.logprobs.tokens.join('')).toBe(c.text);
      expect(choice.logprobs.text_offset[0]).toBe(prompt.length);
      expect(choice.logprobs.top_logprobs.every((alts: Json) => Object.keys(alts).length <= 2)).toBe(true);
    });
    const events = parseSse(await (await post(`${toy.url}/completions`, { ...body, stream: true })).text()) as Json[];
    expect(events.at(-1)).toBe('[DONE]');
    for (let i = 0; i < 2; i++) {
      const mine = events.slice(0, -1).filter((e) => e.choices[0].index === i).map((e) => e.choices[0]);
      expect(mine.map((c) => c.text).join('')).toBe(json.choices[i].text);
      expect(mine.flatMap((c) => c.logprobs?.token_logprobs ?? [])).toEqual(json.choices[i].logprobs.token_logprobs);
    }
  });
});

describe('POST /v1/feedback and GET /v1/groups/:id', () => {
  it('turns rewards for a response into advantages that match computeAdvantages', async () => {
    const res: Json = await (await post(`${toy.url}/chat/completions`, { model: 'toy', messages, n: 4, seed: 1, max_tokens: 12 })).json();
    const rewards = [1, 0, 0.5, null];
    const fb = await post(`${toy.url}/feedback`, { group_id: res.id, rewards });
    expect(fb.status).toBe(200);
    const [group]: Json[] = (await fb.json()).groups;
    const expected = computeAdvantages(rewards, { groupSize: 4 });
    expect(group.id).toBe(res.id);
    expect(group.completions.map((c: Json) => c.advantage)).toEqual(expected.advantages);
    expect(group.completions.map((c: Json) => c.reward)).toEqual([1, 0, 0.5, null]);
    expect(group.completions.map((c: Json) => c.id)).toEqual([0, 1, 2, 3].map((i) => `${res.id}-${i}`));
    expect(group.completions.map((c: Json) => c.text)).toEqual(res.choices.map((c: Json) => c.message.content));

    const shown: Json = await (await fetch(`${toy.url}/groups/${res.id}`)).json();
    expect(shown).toEqual(group);
    expect(shown.messages).toEqual(messages);
    expect(shown.feedback).toMatchObject({ mean: expected.groupMeans[0], std: expected.groupStds[0] });
  });

  it('takes rewards keyed by completion id across groups, and completions the model did not write', async () => {
    const a: Json = await (await post(`${toy.url}/completions`, { model: 'toy', prompt: 'a', n: 2, max_tokens: 5 })).json();
    const b: Json = await (await post(`${toy.url}/completions`, { model: 'toy', prompt: 'b', n: 3, max_tokens: 5 })).json();
    const fb: Json = await (
      await post(`${toy.url}/feedback`, { rewards: { [`${a.id}-0`]: 1, [`${a.id}-1`]: 0, [`${b.id}-2`]: 2 } })
    ).json();
    expect(fb.groups.map((g: Json) => g.id)).toEqual([a.id, b.id]);
    expect(fb.groups[0].completions.map((c: Json) => c.advantage)).toEqual(computeAdvantages([1, 0], { groupSize: 2 }).advantages);
    expect(fb.groups[1].completions.map((c: Json) => c.reward)).toEqual([null, null, 2]);

    const extra: Json = await (
      await post(`${toy.url}/feedback`, { group_id: a.id, rewards: [1, 0], completions: [{ text: 'hand written', reward: 0.5 }] })
    ).json();
    const written = extra.groups[0].completions[2];
    expect(written).toMatchObject({ id: `${a.id}-2`, source: 'external', text: 'hand written', reward: 0.5 });
    const scored = await reference.scoreCompletions!({ prompt: 'a', completions: [await reference.encode!('hand written')] });
    expect(written.logprobs).toEqual(scored.logprobs[0]);
    expect(extra.groups[0].completions.map((c: Json) => c.advantage)).toEqual(computeAdvantages([1, 0, 0.5], { groupSize: 3 }).advantages);

    const fresh: Json = await (
      await post(`${toy.url}/feedback`, { prompt: 'x', completions: [{ text: 'good', reward: 1 }, { text: 'bad', reward: 0 }] })
    ).json();
    expect(fresh.groups[0].completions.map((c: Json) => c.advantage)).toEqual(computeAdvantages([1, 0], { groupSize: 2 }).advantages);
  });
});
