/**
 * The server's request parsing and validation under random and mutated requests: bodies, paths,
 * methods and headers never get a 5xx, and a refused request changes nothing stored (groups on
 * disk, the feedback file). Real HTTP on 127.0.0.1; a bounded number of runs, small generations.
 */
import { request } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../lib/server.js';
import { parseChatRequest, parseCompletionRequest } from '../../lib/serve/requests.js';
import { openFileSessionStore } from '../../lib/node.js';
import { post, startToyServer, type ToyServer } from '../serve/helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

const limits = { maxN: 4, maxTokens: 16, defaultMaxTokens: 4, formatCompileMs: 75 };
const chat = { model: 'toy', messages: [{ role: 'user', content: 'hi' }], n: 2, max_tokens: 4, temperature: 0.7, logprobs: true, top_logprobs: 2, seed: 3, stop: ['x'] };
const text = { model: 'toy', prompt: 'abc', n: 2, max_tokens: 4, logprobs: 2, best_of: 2, seed: 1 };

/** Values a field could be replaced with: every JSON type, edge numbers, huge and odd strings. */
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(0, -1, 1.5, 1e308, -0, Number.MAX_SAFE_INTEGER + 2, '', ' ', 'toy', '\u0000', '%E0%A4%A', [], {}, [[]], { type: 'text' }, null, true),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

/** A valid body with fields replaced, removed or added (at the top level and one level down). */
function mutate(base: Record<string, unknown>) {
  const keys = [...Object.keys(base), 'messages', 'prompt', 'n', 'stream', 'stream_options', 'top_k', 'min_p', 'logit_bias', 'tools', 'response_format', 'echo', 'suffix', 'max_completion_tokens', 'return_token_ids', 'top_p'];
  return fc
    .array(fc.tuple(fc.constantFrom(...keys), fc.oneof(oddValue, fc.constant(undefined)), fc.boolean()), { maxLength: 4 })
    .map((edits) => {
      const body: Record<string, unknown> = structuredClone(base);
      for (const [key, value, nested] of edits) {
        const target = body[key];
        if (nested && Array.isArray(target) && target.length && typeof target[0] === 'object' && target[0] !== null) {
          (target[0] as Record<string, unknown>)[value === undefined ? 'role' : 'content'] = value ?? 'wizard';
        } else if (value === undefined) delete body[key];
        else body[key] = value;
      }
      return body;
    });
}

function expectClientError(error: unknown): void {
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBeGreaterThanOrEqual(400);
  expect((error as ApiError).status).toBeLessThan(500);
}

describe('request parsers (pure)', () => {
  it('accept or refuse with a 4xx ApiError, never another exception; what they accept is in range', () => {
    const bodies = fc.oneof(mutate(chat), mutate(text), fc.jsonValue({ maxDepth: 4 }), fc.anything({ maxDepth: 3 }));
    fc.assert(
      fc.property(bodies, (body) => {
        for (const parse of [parseChatRequest, parseCompletionRequest]) {
          let parsed;
          try {
            parsed = parse(body, limits);
          } catch (error) {
            expectClientError(error);
            continue;
          }
          expect(Number.isInteger(parsed.n) && parsed.n >= 1 && parsed.n <= limits.maxN).toBe(true);
          expect(Number.isInteger(parsed.maxTokens) && parsed.maxTokens >= 1 && parsed.maxTokens <= limits.maxTokens).toBe(true);
          expect(typeof parsed.model).toBe('string');
          if (parsed.input.messages) expect(parsed.input.messages.every((m) => typeof m.content === 'string')).toBe(true);
          else expect(typeof parsed.input.prompt).toBe('string');
        }
      }),
      { numRuns: 2000, seed: 15 },
    );
  });
});

interface Raw {
  status: number;
  body: string;
}

function raw(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the server under random requests', () => {
  let dir: string;
  let toy: ToyServer;
  let groupIds: string[];
  const log: string[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-fuzz-'));
    const store = await openFileSessionStore(join(dir, 'store'));
    toy = await startToyServer({ store, feedbackFile: join(dir, 'feedback.jsonl'), maxN: limits.maxN, maxTokens: limits.maxTokens, log: (line) => log.push(line) });
    groupIds = [];
    for (const body of [chat, { ...chat, n: 3, logprobs: false, top_logprobs: 0 }]) groupIds.push(((await (await post(`${toy.url}/chat/completions`, body)).json()) as Json).id);
    groupIds.push(((await (await post(`${toy.url}/completions`, text)).json()) as Json).id);
  });
  afterAll(async () => {
    await toy.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Everything the server has stored: the group files and the feedback log. */
  async function stored(): Promise<string> {
    const groups = join(dir, 'store', 'groups');
    const names = (await readdir(groups)).filter((n) => n.endsWith('.json')).sort();
    const files = await Promise.all(names.map(async (n) => `${n}=${await readFile(join(groups, n), 'utf8')}`));
    return [...files, await readFile(join(dir, 'feedback.jsonl'), 'utf8')].join('\n');
  }

  /** Feedback bodies: valid ones for the stored groups, mutated. */
  const feedbackBodies = () =>
    fc.oneof(
      mutate({ group_id: groupIds[0], rewards: [1, 0] }),
      mutate({ group_id: groupIds[1], rewards: [1, 0, null], completions: [{ text: 'extra', reward: 0.5 }] }),
      mutate({ rewards: { [`${groupIds[0]}-0`]: 1, [`${groupIds[2]}-1`]: 0 } }),
      mutate({ prompt: 'new', completions: [{ text: 'a', reward: 1 }, { token_ids: [5, 6], reward: 0 }] }),
      mutate({ messages: [{ role: 'user', content: 'q' }], completions: [{ text: 'a', reward: [1, 2] }, { text: 'b', reward: null }] }),
      fc.jsonValue({ maxDepth: 3 }),
    );

  it('answers random and mutated bodies on every POST route with 2xx or 4xx; a refused feedback changes nothing', async () => {
    const seen = new Map<string, Set<number>>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/chat/completions', '/completions', '/feedback'),
        fc.oneof(mutate(chat), mutate(text), feedbackBodies()),
        fc.boolean(),
        async (path, body, asText) => {
          const before = await stored();
          const payload = JSON.stringify(body) ?? 'null';
          // Also as broken JSON: cut at a random point.
          const sent = asText ? payload.slice(0, Math.floor(payload.length / 2)) : payload;
          const res = await post(`${toy.url}${path}`, sent);
          const answer = await res.text();
          expect([path, res.status, answer.slice(0, 200)]).toEqual([path, expect.any(Number), expect.any(String)]);
          expect(res.status).toBeLessThan(500);
          seen.set(path, (seen.get(path) ?? new Set()).add(res.status));
          if (res.headers.get('content-type')?.includes('json')) expect(() => JSON.parse(answer)).not.toThrow();
          if (path === '/feedback' && res.status >= 400) expect(await stored()).toBe(before);
        },
      ),
      { numRuns: 300, seed: 15 },
    );
    // The mutations reach both sides of every route's validation.
    for (const path of ['/chat/completions', '/completions', '/feedback']) {
      expect([path, seen.get(path)?.has(200)]).toEqual([path, true]);
      expect([path, seen.get(path)?.has(400)]).toEqual([path, true]);
    }
    expect(log.filter((line) => line.startsWith('error'))).toEqual([]);
  });

  it('answers random paths, methods and headers without a 5xx, and forged ones change nothing', async () => {
    const segment = fc.oneof(
      fc.constantFrom('v1', 'groups', 'feedback', 'models', 'health', 'chat', 'completions', '..', '.', '%', '%E0%A4%A', '%00', '%2F', '%C0%AF', 'toy', ...[]),
      fc.stringMatching(/^[A-Za-z0-9._~%-]{0,12}$/),
    );
    const path = fc.array(segment, { maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
    const header = (values: string[]) => fc.option(fc.oneof(fc.constantFrom(...values), fc.stringMatching(/^[ -~]{0,30}$/)), { nil: undefined });
    const here = `127.0.0.1:${toy.server.port}`;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'),
        fc.oneof(path, fc.constantFrom(`/v1/groups/${groupIds[0]}`, '/v1/feedback', '/health')),
        header([here, 'localhost', 'evil.example', `[::1]:${toy.server.port}`, '']),
        header(['https://evil.example', 'null', 'http://127.0.0.1']),
        header(['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-8']),
        async (method, url, host, origin, contentType) => {
          const before = await stored();
          const headers: Record<string, string> = {};
          if (host !== undefined) headers.host = host;
          if (origin !== undefined) headers.origin = origin;
          if (contentType !== undefined) headers['content-type'] = contentType;
          const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? JSON.stringify({ group_id: groupIds[0], rewards: [0, 1] }) : undefined;
          const res = await raw(toy.server.port, method, url, headers, body);
          expect(res.status).toBeLessThan(500);
          if (res.status >= 400) expect(await stored()).toBe(before);
        },
      ),
      { numRuns: 300, seed: 16 },
    );
    expect(log.filter((line) => line.startsWith('error'))).toEqual([]);
  });
});
