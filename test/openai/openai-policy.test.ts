import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AbortError, HttpError, InvalidInputError, ResponseTooLargeError, UnsupportedError } from '../../lib/errors.js';
import { MemoryStore, trainingFreeGrpo } from '../../lib/index.js';
import { openFileStore } from '../../lib/node.js';
import { N_PROBE_GROUPS, openAiPolicy } from '../../lib/openai.js';
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
    expect(policy.info).toEqual({ model: 'toy', backend: 'http', note: expect.stringContaining('127.0.0.1'), responseFormats: false });
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

  it('tops up a short answer by asking for the rest, and still asks with n afterwards', async () => {
    // A busy server (or a per-call cap) answers fewer choices than asked, this once.
    fake.handlers = [
      (_b, res) => reply(res, 200, chatResponse(1, 0)),
      (_b, res) => reply(res, 200, chatResponse(1, 1)),
      (_b, res) => reply(res, 200, chatResponse(1, 2)),
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    const group = await policy.generateGroup({ messages, groupSize: 4, seed: 10, maxNewTokens: 8 });
    expect(group.completions.map((c) => c.text)).toEqual(['answer 0', 'answer 1', 'answer 2', 'answer 0']);
    expect(fake.requests.map((r) => [r.body.n, r.body.seed])).toEqual([[4, 10], [3, 11], [2, 12], [1, 13]]);
    expect(group.usage).toEqual({ promptTokens: 7, completionTokens: 8 });
    // The server recovered: the next group is one call with n.
    const next = await policy.generateGroup({ messages, groupSize: 3, maxNewTokens: 8 });
    expect(next.completions).toHaveLength(3);
    expect(fake.requests.slice(4).map((r) => r.body.n)).toEqual([3]);
  });

  it('forwards responseFormat as response_format, and refuses what the API cannot say', async () => {
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', responseFormats: true, ...fast });
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8, responseFormat: { type: 'json_schema', schema } });
    await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8, responseFormat: { type: 'json_object' } });
    await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 });
    expect(fake.requests.map((r) => r.body.response_format)).toEqual([
      { type: 'json_schema', json_schema: { name: 'response', schema, strict: true } },
      { type: 'json_object' },
      undefined,
    ]);
    await expect(policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8, responseFormat: { type: 'regex', pattern: 'a+' } })).rejects.toThrow(UnsupportedError);
    await expect(policy.generateGroup({ prompt: 'x', groupSize: 1, maxNewTokens: 8, responseFormat: { type: 'json_object' } })).rejects.toThrow(UnsupportedError);
    const plain = openAiPolicy({ baseURL: fake.url, model: 'm' });
    expect(plain.info.responseFormats).toBe(false);
    await expect(plain.generateGroup({ messages, groupSize: 1, maxNewTokens: 8, responseFormat: { type: 'json_object' } })).rejects.toThrow(UnsupportedError);
    expect(fake.requests).toHaveLength(3);
  });

  it('probes n again some groups after a server rejected it', async () => {
    fake.handlers = [(_b, res) => reply(res, 400, { error: { message: 'n > 1 is not supported', param: 'n', type: 'invalid_request_error' } })];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', ...fast });
    for (let group = 0; group <= N_PROBE_GROUPS + 1; group++) await policy.generateGroup({ messages, groupSize: 2, maxNewTokens: 8 });
    const ns = fake.requests.map((r) => r.body.n);
    // Rejected once, then one completion per call for N_PROBE_GROUPS groups, then n again.
    expect(ns.slice(0, 3)).toEqual([2, 1, 1]);
    expect(ns.slice(3, 3 + 2 * N_PROBE_GROUPS).every((n) => n === 1)).toBe(true);
    expect(ns.slice(3 + 2 * N_PROBE_GROUPS)).toEqual([2]);
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

  it('cuts the API key and Authorization values out of errors from a server that echoes the request', async () => {
    const echo = (_b: Json, res: ServerResponse, status: number) =>
      reply(res, status, {
        error: { message: `rejected request with headers ${JSON.stringify(fake.requests.at(-1)!.headers)} (key sk-secret-888, Bearer sk-secret-888)` },
      });
    const headers = { 'x-api-key': 'org-token-4242', authorization: 'Bearer sk-secret-888' };
    for (const status of [400, 503]) {
      fake.handlers = [(b, res) => echo(b, res, status), (b, res) => echo(b, res, status)];
      const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey: 'sk-secret-888', headers: { 'x-api-key': headers['x-api-key'] }, maxRetries: 1, ...fast });
      const error = (await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e)) as HttpError;
      expect(error).toBeInstanceOf(HttpError);
      expect(error.message).toMatch(/\[redacted\]/);
      for (const secret of ['sk-secret-888', 'org-token-4242']) {
        expect(error.message).not.toContain(secret);
        expect(JSON.stringify(error)).not.toContain(secret);
        expect(JSON.stringify((error as { cause?: unknown }).cause ?? null)).not.toContain(secret);
      }
    }
  });

  it('keeps the key out of a failed run stored by the training loop', async () => {
    fake.handlers = Array.from({ length: 4 }, () => (_b: Json, res: ServerResponse) =>
      reply(res, 401, { error: { message: `Bad key: ${fake.requests.at(-1)!.headers.authorization}` } }),
    );
    const store = new MemoryStore();
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey: 'sk-stored-999', maxRetries: 0, ...fast });
    const run = trainingFreeGrpo({
      policy,
      store,
      runId: 'echo',
      dataset: [{ id: 'a', prompt: 'x', answer: 'y' }, { id: 'b', prompt: 'z', answer: 'w' }],
      rewards: [{ name: 'one', score: () => 1 }],
      groupSize: 2,
      epochs: 1,
      batchSize: 2,
    });
    await run.result().catch(() => undefined);
    const stored = await store.getRun('echo');
    expect(stored?.status).toBe('failed');
    expect(JSON.stringify(stored)).toMatch(/Bad key: \[redacted\]/);
    expect(JSON.stringify(await store.readBundle('echo'))).not.toContain('sk-stored-999');
  });

  it('refuses a response body over maxResponseBytes, declared or streamed, with a typed error', async () => {
    const big = JSON.stringify(chatResponse(1)).replace('answer 0', 'x'.repeat(50_000));
    fake.handlers = [
      (_b, res) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(big)) }).end(big),
      (_b, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(big.slice(0, 30_000));
        res.end(big.slice(30_000));
      },
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', maxResponseBytes: 20_000, ...fast });
    for (let i = 0; i < 2; i++) {
      const error = await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResponseTooLargeError);
      expect((error as ResponseTooLargeError).limit).toBe(20_000);
      expect((error as Error).message).toMatch(/over maxResponseBytes \(20000\)/);
    }
    // Not retried: two requests for two calls.
    expect(fake.requests).toHaveLength(2);
    const fits = openAiPolicy({ baseURL: fake.url, model: 'm', maxResponseBytes: 60_000, ...fast });
    fake.handlers = [(_b, res) => reply(res, 200, JSON.parse(big))];
    expect((await fits.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 })).completions[0].text).toHaveLength(50_000);
    expect(() => openAiPolicy({ baseURL: fake.url, model: 'm', maxResponseBytes: 0 })).toThrow(InvalidInputError);
  });

  it('reports a dead server as an HttpError that says what to check', async () => {
    const policy = openAiPolicy({ baseURL: 'http://127.0.0.1:9/v1', model: 'm', maxRetries: 0 });
    await expect(policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 })).rejects.toThrow(/Is the server running/);
  });
});

describe('secrets echoed back by an endpoint', () => {
  const fake = new FakeServer();
  let dir: string;
  beforeAll(async () => {
    await fake.start();
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-echo-'));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => fake.server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  const apiKey = 'sk-live-0123456789abcdef';
  const custom = { 'Ocp-Apim-Subscription-Key': 'f00dfeed9999aaaa7777', 'X-Tenant-Session': 'tenant-session-31415926', 'user-agent': 'webgrpo-test' };
  const secrets = [apiKey, custom['Ocp-Apim-Subscription-Key'], custom['X-Tenant-Session']];

  /** Echoes the request's headers every way a gateway might: verbatim, upper-cased, base64, and in `param`. */
  function echo(status: number) {
    return (_b: Json, res: ServerResponse) => {
      const headers = fake.requests.at(-1)!.headers;
      const dump = JSON.stringify(headers);
      reply(res, status, {
        error: {
          message: `denied: ${dump} / ${dump.toUpperCase()} / ${Buffer.from(dump).toString('base64')} / basic ${Buffer.from(`user:${apiKey}`).toString('base64')}`,
          param: `ocp-apim-subscription-key=${headers['ocp-apim-subscription-key']}`,
        },
      });
    };
  }

  function expectClean(text: string): void {
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      expect(text.toLowerCase()).not.toContain(secret.toLowerCase());
      for (const encoded of [Buffer.from(secret).toString('base64'), Buffer.from(`"${secret}"`).toString('base64')]) {
        // Allow the last characters: they also encode whatever follows the secret.
        expect(text).not.toContain(encoded.slice(0, -4));
      }
    }
  }

  it('cuts every header but the known-safe ones out of the error, its cause and its param', async () => {
    for (const status of [400, 503]) {
      fake.handlers = [echo(status), echo(status)];
      const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey, headers: custom, maxRetries: 1, retryDelayMs: 1, random: () => 0 });
      const error = (await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e)) as HttpError;
      expect(error).toBeInstanceOf(HttpError);
      expect(fake.requests.at(-1)!.headers['ocp-apim-subscription-key']).toBe(custom['Ocp-Apim-Subscription-Key']);
      const cause = error.cause as { message: string; param: string | null };
      expect(cause.param).toMatch(/^ocp-apim-subscription-key=\[redacted\]$/);
      expect(error.message).toContain('webgrpo-test');
      for (const text of [error.message, cause.message, String(cause.param), JSON.stringify(error), JSON.stringify(cause)]) expectClean(text);
    }
  });

  it('refuses a key in the base URL (its query or user part) without repeating it, before any request', async () => {
    const before = fake.requests.length;
    for (const baseURL of [`${fake.url}?api-key=${apiKey}`, `http://127.0.0.1:18413/v1?api-key=${apiKey}`, `http://user:${apiKey}@127.0.0.1:18413/v1`, `${fake.url}#${apiKey}`]) {
      const error = (() => {
        try {
          openAiPolicy({ baseURL, model: 'm' });
        } catch (e) {
          return e as InvalidInputError;
        }
      })();
      expect(error, baseURL).toBeInstanceOf(InvalidInputError);
      expect(error!.argument).toBe('baseURL');
      expectClean(error!.message);
    }
    expect(fake.requests.length).toBe(before);
  });

  it('cuts a key echoed as hex, cut to its first characters, or in a URL query out of the error', async () => {
    fake.handlers = [
      (_b: Json, res: ServerResponse) =>
        reply(res, 400, {
          error: {
            message: `bad key ${Buffer.from(apiKey).toString('hex')} / ${Buffer.from(apiKey).toString('hex').toUpperCase()} / ${apiKey.slice(0, 24)}… / see https://gw.example/v1/keys?key=${encodeURIComponent('opaque-token-2718')}&x=1 for help`,
          },
        }),
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey, maxRetries: 0 });
    const error = (await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e)) as HttpError;
    expect(error).toBeInstanceOf(HttpError);
    for (const text of [error.message, JSON.stringify(error.cause)]) {
      expectClean(text);
      expect(text).not.toContain(Buffer.from(apiKey).toString('hex').slice(0, 16));
      expect(text).not.toContain(apiKey.slice(0, 12));
      expect(text).not.toContain('opaque-token-2718');
      expect(text).toContain('https://gw.example/v1/keys?[redacted]');
    }
  });

  it('cuts a key echoed split by whitespace (a space, a line wrap, hex in pairs, wrapped base64) and leaves ordinary words', async () => {
    const hexPairs = Buffer.from(apiKey).toString('hex').replace(/(..)/g, '$1 ');
    const wrapped = Buffer.from(apiKey).toString('base64').replace(/(.{8})/g, '$1\n');
    const words = 'the live key sk is 0123 long; check abcdef and try again';
    fake.handlers = [
      (_b: Json, res: ServerResponse) =>
        reply(res, 400, { error: { message: `bad key ${apiKey.slice(0, 12)} ${apiKey.slice(12)} / ${apiKey.slice(0, 5)}\n\t${apiKey.slice(5)} / ${apiKey.slice(0, 9)}\u200b${apiKey.slice(9)} / ${hexPairs}/ ${wrapped} / ${words}` } }),
    ];
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey, maxRetries: 0 });
    const error = (await policy.generateGroup({ messages, groupSize: 1, maxNewTokens: 8 }).catch((e: unknown) => e)) as HttpError;
    expect(error).toBeInstanceOf(HttpError);
    for (const text of [error.message, JSON.stringify(error.cause)]) {
      const joined = text.replace(/[\s\u200b]|\\[nt]|\\u200b/g, '');
      expectClean(joined);
      expect(joined).not.toContain(Buffer.from(apiKey).toString('hex').slice(0, 16));
      expect(joined).not.toContain(apiKey.slice(0, 12));
      expect(joined).not.toContain(apiKey.slice(-12));
      expect(text).toContain(words);
      expect(text.match(/\[redacted\]/g)).toHaveLength(5);
    }
  });

  it("keeps them out of the failed run's run.json", async () => {
    fake.handlers = Array.from({ length: 4 }, () => echo(401));
    const store = await openFileStore(join(dir, 'runs'));
    const policy = openAiPolicy({ baseURL: fake.url, model: 'm', apiKey, headers: custom, maxRetries: 0 });
    const run = trainingFreeGrpo({
      policy,
      store,
      runId: 'echoed',
      dataset: [{ id: 'a', prompt: 'x', answer: 'y' }, { id: 'b', prompt: 'z', answer: 'w' }],
      rewards: [{ name: 'one', score: () => 1 }],
      groupSize: 2,
      epochs: 1,
      batchSize: 2,
    });
    await run.result().catch(() => undefined);
    expect((await store.getRun('echoed'))?.status).toBe('failed');
    const runDir = join(dir, 'runs', 'runs', 'echoed');
    const files = await readdir(runDir, { recursive: true });
    const runJson = await readFile(join(runDir, 'run.json'), 'utf8');
    expect(runJson).toMatch(/denied/);
    expect(runJson).toMatch(/\[redacted\]/);
    for (const file of files) {
      const text = await readFile(join(runDir, file), 'utf8').catch(() => '');
      expectClean(text);
    }
  });
});
