import { request } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve } from '../../lib/server.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { checkTrlPromptCompletion } from '../export/trl-format.js';
import { parseSse, post, startToyServer, type ToyServer } from './helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

const messages = [{ role: 'user', content: 'hello' }];
const chat = { model: 'toy', messages, max_tokens: 8 };

function expectOpenAiError(json: Json): void {
  expect(Object.keys(json)).toEqual(['error']);
  expect(typeof json.error.message).toBe('string');
  expect(json.error.message.length).toBeGreaterThan(10);
  expect(json.error).toHaveProperty('type');
  expect(json.error).toHaveProperty('param');
  expect(json.error).toHaveProperty('code');
}

/** Sends raw bytes with node:http, so bodies fetch would refuse (or a lying length) can be tried. */
function rawRequest(port: number, path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('malformed requests', () => {
  let toy: ToyServer;
  beforeAll(async () => {
    toy = await startToyServer({ bodyLimit: 64 * 1024, maxTokens: 512 });
  });
  afterAll(() => toy.server.close());

  const chatCases: [string, unknown, number, string | null][] = [
    ['a JSON array', [], 400, null],
    ['a JSON string', 'hello', 400, null],
    ['no model', { messages }, 400, 'model'],
    ['a numeric model', { ...chat, model: 7 }, 400, 'model'],
    ['an unknown model', { ...chat, model: 'gpt-4o' }, 404, 'model'],
    ['no messages', { model: 'toy' }, 400, 'messages'],
    ['messages as a string', { ...chat, messages: 'hi' }, 400, 'messages'],
    ['empty messages', { ...chat, messages: [] }, 400, 'messages'],
    ['a message that is a number', { ...chat, messages: [3] }, 400, 'messages[0]'],
    ['an unknown role', { ...chat, messages: [{ role: 'wizard', content: 'x' }] }, 400, 'messages[0].role'],
    ['numeric content', { ...chat, messages: [{ role: 'user', content: 5 }] }, 400, 'messages[0].content'],
    ['an image part', { ...chat, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 400, 'messages[0].content[0]'],
    ['n = 0', { ...chat, n: 0 }, 400, 'n'],
    ['n = -3', { ...chat, n: -3 }, 400, 'n'],
    ['n = 1.5', { ...chat, n: 1.5 }, 400, 'n'],
    ['n as a string', { ...chat, n: '2' }, 400, 'n'],
    ['n = 10000', { ...chat, n: 10000 }, 400, 'n'],
    ['max_tokens = 0', { ...chat, max_tokens: 0 }, 400, 'max_tokens'],
    ['absurd max_tokens', { ...chat, max_tokens: 1e12 }, 400, 'max_tokens'],
    ['max_tokens as a string', { ...chat, max_tokens: 'lots' }, 400, 'max_tokens'],
    ['absurd max_completion_tokens', { ...chat, max_completion_tokens: 999999 }, 400, 'max_completion_tokens'],
    ['negative temperature', { ...chat, temperature: -1 }, 400, 'temperature'],
    ['temperature as a string', { ...chat, temperature: 'hot' }, 400, 'temperature'],
    ['top_p = 0', { ...chat, top_p: 0 }, 400, 'top_p'],
    ['top_p > 1', { ...chat, top_p: 1.5 }, 400, 'top_p'],
    ['seed = 1.5', { ...chat, seed: 1.5 }, 400, 'seed'],
    ['a numeric stop', { ...chat, stop: 5 }, 400, 'stop'],
    ['a stop list with a number', { ...chat, stop: ['a', 1] }, 400, 'stop'],
    ['an empty stop string', { ...chat, stop: [''] }, 400, 'stop'],
    ['too many stop strings', { ...chat, stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }, 400, 'stop'],
    ['logprobs as a string', { ...chat, logprobs: 'yes' }, 400, 'logprobs'],
    ['top_logprobs = 50', { ...chat, logprobs: true, top_logprobs: 50 }, 400, 'top_logprobs'],
    ['top_logprobs without logprobs', { ...chat, top_logprobs: 2 }, 400, 'top_logprobs'],
    ['stream as a string', { ...chat, stream: 'true' }, 400, 'stream'],
    ['stream_options without stream', { ...chat, stream_options: { include_usage: true } }, 400, 'stream_options'],
    ['a presence penalty', { ...chat, presence_penalty: 1 }, 400, 'presence_penalty'],
    ['tools', { ...chat, tools: [{ type: 'function', function: { name: 'f' } }] }, 400, 'tools'],
    ['a JSON response format', { ...chat, response_format: { type: 'json_object' } }, 400, 'response_format'],
    ['a logit bias', { ...chat, logit_bias: { '5': 10 } }, 400, 'logit_bias'],
  ];

  it.each(chatCases)('chat completions with %s: %i and an OpenAI-style error', async (_name, body, status, param) => {
    const res = await post(`${toy.url}/chat/completions`, body);
    expect(res.status).toBe(status);
    const json: Json = await res.json();
    expectOpenAiError(json);
    expect(json.error.param).toBe(param);
  });

  const completionCases: [string, unknown, string | null][] = [
    ['a numeric prompt', { model: 'toy', prompt: 12 }, 'prompt'],
    ['token-id prompts', { model: 'toy', prompt: [1, 2, 3] }, 'prompt'],
    ['two prompts', { model: 'toy', prompt: ['a', 'b'] }, 'prompt'],
    ['an empty prompt', { model: 'toy', prompt: '' }, 'prompt'],
    ['legacy logprobs = 9', { model: 'toy', prompt: 'a', logprobs: 9 }, 'logprobs'],
    ['echo', { model: 'toy', prompt: 'a', echo: true }, 'echo'],
    ['best_of above n', { model: 'toy', prompt: 'a', best_of: 3 }, 'best_of'],
  ];

  it.each(completionCases)('completions with %s: 400', async (_name, body, param) => {
    const res = await post(`${toy.url}/completions`, body);
    expect(res.status).toBe(400);
    const json: Json = await res.json();
    expectOpenAiError(json);
    expect(json.error.param).toBe(param);
  });

  it('answers broken bodies, wrong methods and paths with OpenAI-style errors, and stays healthy', async () => {
    const cases: [Promise<Response>, number, string][] = [
      [post(`${toy.url}/chat/completions`, '{"model": "toy", "messages": ['), 400, 'invalid_json'],
      [post(`${toy.url}/chat/completions`, ''), 400, 'invalid_json'],
      [post(`${toy.url}/chat/completions`, 'null'), 400, 'invalid_json'],
      [fetch(`${toy.url}/chat/completions`), 405, 'method_not_allowed'],
      [fetch(`${toy.url}/engines`), 404, 'unknown_url'],
      [fetch(`${toy.url}/groups/chatcmpl-nope`), 404, 'not_found'],
      [post(`${toy.url}/feedback`, { group_id: 'chatcmpl-nope', rewards: [1, 0] }), 404, 'not_found'],
      [post(`${toy.url}/feedback`, { rewards: [1, 0] }), 400, 'invalid_value'],
      [post(`${toy.url}/feedback`, { rewards: { 'chatcmpl-nope-0': 1 } }), 404, 'not_found'],
      [post(`${toy.url}/feedback`, { rewards: { 'no-id-here': 1 } }), 400, 'invalid_value'],
      [post(`${toy.url}/feedback`, { group_id: 5, rewards: [1] }), 400, 'invalid_type'],
      [post(`${toy.url}/feedback`, { prompt: 'x', completions: [{ text: 'a' }] }), 400, 'missing_required_parameter'],
      [post(`${toy.url}/feedback`, { prompt: 'x', completions: 'many' }), 400, 'invalid_type'],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      expect(res.status).toBe(status);
      const json: Json = await res.json();
      expectOpenAiError(json);
      expect(json.error.code).toBe(code);
    }
    const asked: Json = await (await post(`${toy.url}/chat/completions`, { ...chat, n: 2 })).json();
    const badRewards: [unknown, RegExp][] = [
      [[1], /has 1 values but group/],
      [[1, 'good'], /must be a finite number/],
      [{ [`${asked.id}-7`]: 1 }, /not a completion of group/],
      ['high', /must be a list/],
    ];
    for (const [rewards, message] of badRewards) {
      const res = await post(`${toy.url}/feedback`, { group_id: asked.id, rewards });
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(message);
    }
    const single: Json = await (await post(`${toy.url}/chat/completions`, chat)).json();
    const lonely = await post(`${toy.url}/feedback`, { group_id: single.id, rewards: [1] });
    expect(lonely.status).toBe(400);
    expect((await lonely.json()).error.message).toMatch(/at least 2/);
    // Nothing bad was stored: the group is still untold.
    expect((await (await fetch(`${toy.url}/groups/${asked.id}`)).json()).feedback).toBeNull();
  });

  it('refuses bodies over the limit with 413, announced or not', async () => {
    const big = JSON.stringify({ ...chat, messages: [{ role: 'user', content: 'x'.repeat(100 * 1024) }] });
    const announced = await rawRequest(toy.server.port, '/v1/chat/completions', big, { 'content-type': 'application/json', 'content-length': String(big.length) });
    expect(announced.status).toBe(413);
    expect(JSON.parse(announced.body).error.code).toBe('request_too_large');
    const chunked = await rawRequest(toy.server.port, '/v1/chat/completions', big, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    expect(chunked.status).toBe(413);
  });

  it('ignores unknown fields, whatever their type, and still serves normally afterwards', async () => {
    const res = await post(`${toy.url}/chat/completions`, { ...chat, user: 'u1', metadata: { a: 1 }, foo: [1, { b: null }], store: false, presence_penalty: 0 });
    expect(res.status).toBe(200);
    const health: Json = await (await fetch(toy.url.replace(/\/v1$/, '/health'))).json();
    expect(health).toMatchObject({ status: 'ok', model: 'toy', queue: { running: 0, pending: 0 } });
  });
});

describe('a failing policy', () => {
  it('turns its failures into 500s and error events, logs them, and keeps serving', async () => {
    const toy = createToyPolicy();
    let decodes = 0;
    let failNext = false;
    const flaky = {
      ...toy,
      info: toy.info,
      generateGroup: (o: Parameters<typeof toy.generateGroup>[0]) => (failNext ? Promise.reject(new Error('kernel exploded')) : toy.generateGroup(o)),
      decode: async (ids: number[]) => {
        if (++decodes === 7) throw new Error('tokenizer exploded');
        return toy.decode!(ids);
      },
    };
    const log: string[] = [];
    const server = await serve({ policy: flaky, port: 0, log: (line) => log.push(line) });
    try {
      const streamed = await post(`${server.url}/chat/completions`, { ...chat, max_tokens: 40, seed: 1, stream: true });
      const events = parseSse(await streamed.text()) as Json[];
      expect(events.at(-1)).toBe('[DONE]');
      expect(events.at(-2).error).toMatchObject({ type: 'server_error', code: 'internal_error' });
      expect(log.some((line) => line.includes('tokenizer exploded'))).toBe(true);

      failNext = true;
      const failed = await post(`${server.url}/chat/completions`, chat);
      expect(failed.status).toBe(500);
      const body: Json = await failed.json();
      expectOpenAiError(body);
      expect(body.error.message).not.toContain('kernel exploded');
      expect(log.some((line) => line.includes('kernel exploded'))).toBe(true);

      failNext = false;
      expect((await post(`${server.url}/chat/completions`, chat)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('API key', () => {
  it('requires the bearer token on /v1 when set, but not on /health', async () => {
    const toy = await startToyServer({ apiKey: 'sk-test-123' });
    try {
      const none = await post(`${toy.url}/chat/completions`, chat);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer');
      expect((await none.json()).error.code).toBe('invalid_api_key');
      const wrong = await fetch(`${toy.url}/models`, { headers: { authorization: 'Bearer sk-test-124' } });
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).not.toContain('sk-test-123');
      const right = await post(`${toy.url}/chat/completions`, chat, { authorization: 'Bearer sk-test-123' });
      expect(right.status).toBe(200);
      expect((await fetch(toy.url.replace(/\/v1$/, '/health'))).status).toBe(200);
    } finally {
      await toy.server.close();
    }
  });
});

describe('concurrency', () => {
  it('queues many concurrent clients onto the one model without mixing their results', async () => {
    // The toy policy throws if two generations overlap, as an onnxruntime session would.
    const toy = await startToyServer();
    const reference = createToyPolicy();
    try {
      const clients = Array.from({ length: 24 }, (_, i) => ({
        body: { model: 'toy', messages: [{ role: 'user', content: `client ${i}` }], n: 1 + (i % 4), seed: i, max_tokens: 16, stream: i % 3 === 0 },
      }));
      const answers = await Promise.all(
        clients.map(async ({ body }) => {
          const res = await post(`${toy.url}/chat/completions`, body);
          expect(res.status).toBe(200);
          if (!body.stream) return ((await res.json()) as Json).choices.map((c: Json) => c.message.content);
          const events = parseSse(await res.text()).slice(0, -1) as Json[];
          return Array.from({ length: body.n }, (_, i) =>
            events.filter((e) => e.choices[0].index === i).map((e) => e.choices[0].delta.content ?? '').join(''),
          );
        }),
      );
      for (const [i, { body }] of clients.entries()) {
        const expected = await reference.generateGroup({ messages: body.messages as never, groupSize: body.n, seed: body.seed, maxNewTokens: 16 });
        expect(answers[i]).toEqual(expected.completions.map((c) => c.text));
      }
      expect(toy.policy.generateCalls).toBe(24);
    } finally {
      await toy.server.close();
    }
  });

  it('answers 503 with Retry-After when too many requests wait, and recovers', async () => {
    const toy = await startToyServer({ maxPending: 1, toy: { stepDelayMs: 10 } });
    try {
      const responses = await Promise.all(Array.from({ length: 6 }, () => post(`${toy.url}/chat/completions`, { ...chat, max_tokens: 20 })));
      const statuses = responses.map((r) => r.status);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
      const busy = responses.filter((r) => r.status === 503);
      expect(busy.length).toBeGreaterThanOrEqual(1);
      expect(busy[0].headers.get('retry-after')).toBe('1');
      expect((await busy[0].json()).error.code).toBe('overloaded');
      expect((await post(`${toy.url}/chat/completions`, chat)).status).toBe(200);
    } finally {
      await toy.server.close();
    }
  });

  it('cancels the generation of a client that disconnects', async () => {
    const toy = await startToyServer({ toy: { stepDelayMs: 20 } });
    try {
      const controller = new AbortController();
      const pending = post(`${toy.url}/chat/completions`, { ...chat, max_tokens: 4000, stream: true }).then(async (res) => {
        const reader = res.body!.getReader();
        await reader.read();
        controller.abort();
        await reader.cancel();
      });
      await pending;
      // 4000 steps of 20 ms would take 80 s; the cancelled generation frees the model at its next step.
      const res = await post(`${toy.url}/chat/completions`, chat);
      expect(res.status).toBe(200);
      const group: Json = await (await fetch(`${toy.url}/groups/${(await res.json()).id}`)).json();
      expect(group.completions).toHaveLength(1);
    } finally {
      await toy.server.close();
    }
  });
});

describe('graceful shutdown', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-serve-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('lets in-flight requests finish, refuses new ones, and flushes the feedback file', async () => {
    const feedbackFile = join(dir, 'feedback.jsonl');
    const toy = await startToyServer({ feedbackFile, feedbackFormat: 'standard', toy: { stepDelayMs: 3 } });
    const asked: Json = await (await post(`${toy.url}/chat/completions`, { ...chat, n: 3, seed: 2 })).json();
    await post(`${toy.url}/feedback`, { group_id: asked.id, rewards: [1, 0, 0] });

    const streaming = post(`${toy.url}/chat/completions`, { ...chat, seed: 4, max_tokens: 60, stream: true }).then((r) => r.text());
    const whole = post(`${toy.url}/completions`, { model: 'toy', prompt: 'abc', seed: 4, max_tokens: 60 }).then((r) => r.json());
    // Wait until both are in the server (one generating, one queued), then close.
    while (toy.server.session.queue.stats.running + toy.server.session.queue.stats.pending < 2) await new Promise((r) => setTimeout(r, 2));
    const closed = toy.server.close();
    // A new connection is refused; a kept-alive one would get a 503.
    const late = await fetch(`${toy.url}/models`).then((r) => r.status, () => 'refused');
    expect([503, 'refused']).toContain(late);
    const events = parseSse(await streaming);
    expect(events.at(-1)).toBe('[DONE]');
    expect(((await whole) as Json).choices[0].finish_reason).toMatch(/stop|length/);
    await closed;

    const lines = checkTrlPromptCompletion(await readFile(feedbackFile, 'utf8'));
    expect(lines.columns).toEqual(['advantage', 'completion', 'completion_id', 'group_id', 'prompt', 'reward']);
    expect(lines.rows.map((r) => r.reward)).toEqual([1, 0, 0]);
    expect(lines.rows.map((r) => r.completion)).toEqual(asked.choices.map((c: Json) => c.message.content));
  });

  it('refuses feedback it could not log faithfully, before telling anything', async () => {
    const feedbackFile = join(dir, 'standard.jsonl');
    const toyPolicy = createToyPolicy();
    // A policy that cannot decode: a chat group's rendered prompt stays unknown.
    const { decode: _decode, ...withoutDecode } = toyPolicy;
    const server = await serve({ policy: withoutDecode, port: 0, feedbackFile, feedbackFormat: 'standard' });
    try {
      const chatGroup: Json = await (await post(`${server.url}/chat/completions`, { ...chat, n: 2 })).json();
      const refused = await post(`${server.url}/feedback`, { group_id: chatGroup.id, rewards: [1, 0] });
      expect(refused.status).toBe(400);
      expect((await refused.json()).error.message).toMatch(/conversational feedback format/);
      expect((await (await fetch(`${server.url}/groups/${chatGroup.id}`)).json()).feedback).toBeNull();
      const textGroup: Json = await (await post(`${server.url}/completions`, { model: 'toy', prompt: 'raw', n: 2, max_tokens: 4 })).json();
      expect((await post(`${server.url}/feedback`, { group_id: textGroup.id, rewards: [1, 0] })).status).toBe(200);
    } finally {
      await server.close();
    }
    expect(checkTrlPromptCompletion(await readFile(feedbackFile, 'utf8')).rows.map((r) => r.prompt)).toEqual(['raw', 'raw']);
  });
});
