import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AbortError, HttpError, InvalidInputError } from '../../lib/errors.js';
import { openAiPolicy } from '../../lib/openai.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { startToyServer, type ToyServer } from '../serve/helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- request bodies under test

const messages = [{ role: 'user' as const, content: 'Count to five.' }];

describe('openAiPolicy against webgrpo serve', () => {
  let toy: ToyServer;
  const reference = createToyPolicy();
  beforeAll(async () => {
    toy = await startToyServer({ apiKey: 'sk-serve' });
  });
  afterAll(() => toy.server.close());

  it('samples a seeded group with log-probs over chat, as the local policy does', async () => {
    const policy = openAiPolicy({ baseURL: toy.url, apiKey: 'sk-serve', model: 'toy' });
    const group = await policy.generateGroup({ messages, groupSize: 4, seed: 21, temperature: 0.9, maxNewTokens: 20 });
    const expected = await reference.generateGroup({ messages, groupSize: 4, seed: 21, temperature: 0.9, maxNewTokens: 20 });
    expect(group.completions.map((c) => c.text)).toEqual(expected.completions.map((c) => c.text));
    expect(group.completions.map((c) => c.logprobs)).toEqual(expected.completions.map((c) => c.logprobs));
    expect(group.completions.every((c) => c.tokenIds.length === 0)).toBe(true);
    expect(group.usage).toEqual(expected.usage);
    expect(policy.info).toEqual({ model: 'toy', backend: 'http', note: expect.stringContaining('127.0.0.1') });
  });

  it('gets token ids, top log-probs and top_k through the extensions, on the completions endpoint', async () => {
    const policy = openAiPolicy({ baseURL: toy.url, apiKey: 'sk-serve', model: 'toy', extensions: true });
    const options = { prompt: 'Once', groupSize: 3, seed: 2, topK: 5, maxNewTokens: 16, topLogprobs: 2, stop: ['q'] };
    const group = await policy.generateGroup(options);
    const expected = await reference.generateGroup(options);
    expect(group.promptTokenIds).toEqual(expected.promptTokenIds);
    group.completions.forEach((c, i) => {
      expect(c.text).toBe(expected.completions[i].text);
      expect(c.tokenIds).toEqual(expected.completions[i].tokenIds);
      expect(c.logprobs).toEqual(expected.completions[i].logprobs);
      expect(c.topLogprobs).toEqual(expected.completions[i].topLogprobs);
    });
  });

  it('refuses top_k without extensions rather than ignoring it', async () => {
    const policy = openAiPolicy({ baseURL: toy.url, model: 'toy' });
    await expect(policy.generateGroup({ messages, groupSize: 2, maxNewTokens: 4, topK: 3 })).rejects.toThrow(InvalidInputError);
    expect(() => openAiPolicy({ baseURL: 'localhost:8000', model: 'toy' })).toThrow(/baseURL/);
  });
});

/** A scripted OpenAI-compatible server: each request is answered by the next handler in line. */
class FakeServer {
  server!: Server;
  url = '';
  requests: { headers: IncomingMessage['headers']; body: Json }[] = [];
  handlers: ((body: Json, res: ServerResponse) => void)[] = [];

  async start(): Promise<void> {
    this.server = createServer(async (req, res) => {
      let text = '';
      for await (const chunk of req) text += chunk;
      const body = JSON.parse(text);
      this.requests.push({ headers: req.headers, body });
      const handler = this.handlers.shift() ?? ((b: Json, r: ServerResponse) => reply(r, 200, chatResponse(b.n ?? 1)));
      handler(body, res);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function chatResponse(n: number, offset = 0) {
  return {
    choices: Array.from({ length: n }, (_, i) => ({
      index: i,
      message: { role: 'assistant', content: `answer ${offset + i}` },
      finish_reason: 'stop',
      logprobs: { content: [{ token: 'answer', logprob: -0.5, top_logprobs: [] }] },
    })),
    usage: { prompt_tokens: 7, completion_tokens: n * 2 },
  };
}

describe('openAiPolicy against other servers', () => {
  const fake = new FakeServer();
  beforeAll(() => fake.start());
  afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));
  afterEach(() => {
    fake.requests = [];
    fake.handlers = [];
  });

  const fast = { retryDelayMs: 1, random: () => 0 };

  it('tops up a group with more calls when the server ignores n, and remembers it', async () => {
    fake.handlers = Array.from({ length: 5 }, (_, k) => (_b: Json, res: ServerResponse) => reply(res, 200, chatResponse(1, k)));
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    const group = await policy.generateGroup({ messages, groupSize: 3, seed: 10, maxNewTokens: 8 });
    expect(group.completions.map((c) => c.text)).toEqual(['answer 0', 'answer 1', 'answer 2']);
    expect(fake.requests.map((r) => [r.body.n, r.body.seed])).toEqual([[3, 10], [1, 11], [1, 12]]);
    expect(group.usage).toEqual({ promptTokens: 7, completionTokens: 6 });
    await policy.generateGroup({ messages, groupSize: 2, maxNewTokens: 8 });
    expect(fake.requests.slice(3).map((r) => r.body.n)).toEqual([1, 1]);
  });

  it('falls back to one call per completion when the server rejects n, and drops rejected log-probs', async () => {
    fake.handlers = [
      (_b, res) => reply(res, 400, { error: { message: 'n > 1 is not supported', param: 'n', type: 'invalid_request_error' } }),
      (_b, res) => reply(res, 400, { error: { message: 'logprobs are not supported for this model', type: 'invalid_request_error' } }),
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    const group = await policy.generateGroup({ messages, groupSize: 2, maxNewTokens: 8 });
    expect(group.completions).toHaveLength(2);
    expect(fake.requests.map((r) => [r.body.n, r.body.logprobs])).toEqual([[2, true], [1, true], [1, undefined], [1, undefined]]);
  });

  it('retries 429 and 5xx honouring Retry-After, then succeeds', async () => {
    fake.handlers = [
      (_b, res) => reply(res, 429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '0' }),
      (_b, res) => reply(res, 503, { error: { message: 'overloaded' } }, { 'retry-after-ms': '5' }),
      (_b, res) => reply(res, 500, 'oops'),
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    const group = await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 });
    expect(group.completions[0].text).toBe('answer 0');
    expect(fake.requests).toHaveLength(4);
  });

  it('gives up after maxRetries, and does not retry a 400', async () => {
    fake.handlers = Array.from({ length: 3 }, () => (_b: Json, res: ServerResponse) => reply(res, 502, { error: { message: 'bad gateway' } }));
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', maxRetries: 2, ...fast });
    const error = await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(502);
    expect((error as HttpError).message).toMatch(/failed with 502: bad gateway/);
    expect(fake.requests).toHaveLength(3);

    fake.requests = [];
    fake.handlers = [(_b, res) => reply(res, 400, { error: { message: 'messages must not be empty', param: 'messages' } })];
    await expect(policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 })).rejects.toThrow(/400: messages must not be empty/);
    expect(fake.requests).toHaveLength(1);
  });

  it('refuses to wait longer than maxRetryDelayMs when the server asks to', async () => {
    fake.handlers = [(_b, res) => reply(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '3600' })];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    await expect(policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 })).rejects.toThrow(/wait 3600 s/);
  });

  it('times out a hung attempt, and stops on abort even while waiting to retry', async () => {
    const hang = () => undefined;
    fake.handlers = [hang, hang];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', timeoutMs: 100, maxRetries: 1, ...fast });
    const error = await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).message).toMatch(/timed out after 100 ms/);
    expect(fake.requests).toHaveLength(2);

    fake.requests = [];
    fake.handlers = [hang];
    const controller = new AbortController();
    const aborted = policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8, signal: controller.signal });
    while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await expect(aborted).rejects.toThrow(AbortError);

    fake.handlers = [(_b, res) => reply(res, 503, { error: { message: 'busy' } }, { 'retry-after': '20' })];
    const waiting = new AbortController();
    const sleeping = openAiPolicy({ baseURL: fake.url, model: 'm', maxRetryDelayMs: 60_000 }).generateGroup({
      messages,
      groupSize: 1,
      maxNewTokens: 8,
      signal: waiting.signal,
    });
    while (fake.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    waiting.abort();
    await expect(sleeping).rejects.toThrow(AbortError);
  });

  it('sends the API key as a bearer token and never shows it', async () => {
    fake.handlers = [(_b, res) => reply(res, 401, { error: { message: 'Incorrect API key provided' } })];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey: 'sk-secret-777', ...fast });
    const error = await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e);
    expect(fake.requests[0].headers.authorization).toBe('Bearer sk-secret-777');
    expect(String((error as Error).message)).not.toContain('sk-secret-777');
    expect(JSON.stringify(policy)).not.toContain('sk-secret-777');
    expect(JSON.stringify(error)).not.toContain('sk-secret-777');
  });

  it('reports a dead server as an HttpError that says what to check', async () => {
    const policy = openAiPolicy({ baseURL: 'http://127.0.0.1:9/v1', model: 'm', maxRetries: 0 });
    await expect(policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 })).rejects.toThrow(/Is the server running/);
  });
});
