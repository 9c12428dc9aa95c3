/**
 * Doors a hostile client (or a web page in the browser of whoever runs the server) could use:
 * forged Host / Origin / Content-Type, leaked paths, malformed URLs, unwritable feedback logs,
 * oversized tells, and what the request log says about them. Real HTTP on 127.0.0.1.
 */
import { request } from 'node:http';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { serve } from '../../lib/server.js';
import { openFileSessionStore } from '../../lib/node.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { post, startToyServer, type ToyServer } from './helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

const chat = { model: 'toy', messages: [{ role: 'user', content: 'hello' }], max_tokens: 6 };

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with headers fetch would not let a test forge (Host). */
function raw(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, setHost: !('host' in headers) }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-hardening-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('requests from other sites', () => {
  it('refuses a forged Origin, a rebound Host and a text/plain post, and the feedback file and group stay unchanged', async () => {
    const feedbackFile = join(dir, 'forged.jsonl');
    const toy = await startToyServer({ feedbackFile });
    try {
      const port = toy.server.port;
      const asked: Json = await (await post(`${toy.url}/chat/completions`, { ...chat, n: 2 })).json();
      const body = JSON.stringify({ group_id: asked.id, rewards: [1, 0] });
      const here = `127.0.0.1:${port}`;
      const attempts: [string, Record<string, string>, number, string][] = [
        // A page's form or fetch with no-cors: no preflight, so only the server can say no.
        ['text/plain', { host: here, 'content-type': 'text/plain' }, 415, 'unsupported_media_type'],
        ['a form post', { host: here, 'content-type': 'application/x-www-form-urlencoded' }, 415, 'unsupported_media_type'],
        ['no content type', { host: here }, 415, 'unsupported_media_type'],
        ['a foreign Origin', { host: here, origin: 'https://evil.example', 'content-type': 'application/json' }, 403, 'origin_not_allowed'],
        ['Origin null', { host: here, origin: 'null', 'content-type': 'application/json' }, 403, 'origin_not_allowed'],
        // DNS rebinding: the attacker's name now resolves to 127.0.0.1.
        ['a rebound Host', { host: `evil.example:${port}`, 'content-type': 'application/json' }, 403, 'invalid_host'],
        ['another IP', { host: `10.0.0.7:${port}`, 'content-type': 'application/json' }, 403, 'invalid_host'],
        ['a Host with a path', { host: `127.0.0.1:${port}/x`, 'content-type': 'application/json' }, 403, 'invalid_host'],
      ];
      for (const [name, headers, status, code] of attempts) {
        const res = await raw(port, 'POST', '/v1/feedback', headers, body);
        expect([name, res.status]).toEqual([name, status]);
        expect(JSON.parse(res.body).error.code).toBe(code);
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
      }
      // A rebound Host cannot read anything either, /health included.
      for (const path of ['/health', '/v1/models', `/v1/groups/${asked.id}`]) {
        expect((await raw(port, 'GET', path, { host: 'evil.example' })).status).toBe(403);
      }
      expect(await readFile(feedbackFile, 'utf8')).toBe('');
      expect(((await (await fetch(`${toy.url}/groups/${asked.id}`)).json()) as Json).feedback).toBeNull();

      // The same post, honestly sent, is taken; localhost names a loopback server too.
      const honest = await raw(port, 'POST', '/v1/feedback', { host: `localhost:${port}`, 'content-type': 'application/json; charset=utf-8' }, body);
      expect(honest.status).toBe(200);
      expect((await readFile(feedbackFile, 'utf8')).trim().split('\n')).toHaveLength(2);
    } finally {
      await toy.server.close();
    }
  });

  it('accepts the names given as allowed hosts and the listed browser origins, with CORS headers', async () => {
    const toy = await startToyServer({ allowedHosts: ['webgrpo.lan'], corsOrigins: ['http://app.example'] });
    try {
      const port = toy.server.port;
      const named = await raw(port, 'GET', '/v1/models', { host: `webgrpo.lan:${port}` });
      expect(named.status).toBe(200);
      const listed = await raw(port, 'POST', '/v1/chat/completions', { host: `127.0.0.1:${port}`, origin: 'http://app.example', 'content-type': 'application/json' }, JSON.stringify(chat));
      expect(listed.status).toBe(200);
      expect(listed.headers['access-control-allow-origin']).toBe('http://app.example');
      const preflight = await raw(port, 'OPTIONS', '/v1/chat/completions', { host: `127.0.0.1:${port}`, origin: 'http://app.example', 'access-control-request-method': 'POST' });
      expect(preflight.status).toBe(204);
      const other = await raw(port, 'OPTIONS', '/v1/chat/completions', { host: `127.0.0.1:${port}`, origin: 'http://other.example', 'access-control-request-method': 'POST' });
      expect(other.status).toBe(403);
      // A listed origin still has to send JSON, and learns why it was refused.
      const plain = await raw(port, 'POST', '/v1/chat/completions', { host: `127.0.0.1:${port}`, origin: 'http://app.example', 'content-type': 'text/plain' }, JSON.stringify(chat));
      expect(plain.status).toBe(415);
      expect(plain.headers['access-control-allow-origin']).toBe('http://app.example');
    } finally {
      await toy.server.close();
    }
  });
});

describe('API key', () => {
  it('refuses an empty key or one no header can carry, instead of serving without authentication', async () => {
    const policy = createToyPolicy();
    for (const apiKey of ['', ' ', ' key']) {
      await expect(serve({ policy, port: 0, apiKey })).rejects.toBeInstanceOf(InvalidInputError);
    }
  });
});

describe('what clients see', () => {
  it('names the served model in groups and feedback, never the folder it was loaded from', async () => {
    const toy = createToyPolicy();
    const folder = join(dir, 'models', 'webgrpo-toy');
    const policy = { ...toy, info: { ...toy.info, model: folder } };
    const server = await serve({ policy, port: 0, modelId: 'toy' });
    try {
      const asked: Json = await (await post(`${server.url}/chat/completions`, { ...chat, n: 2 })).json();
      expect(asked.model).toBe('toy');
      const group = await (await fetch(`${server.url}/groups/${asked.id}`)).text();
      const told = await (await post(`${server.url}/feedback`, { group_id: asked.id, rewards: [1, 0] })).text();
      const added = await (await post(`${server.url}/feedback`, { prompt: 'p', completions: [{ text: 'a', reward: 1 }, { text: 'b', reward: 0 }] })).text();
      for (const text of [group, told, added]) {
        expect(text).not.toContain(dir);
        expect(text).toMatch(/"model":"toy"/);
      }
    } finally {
      await server.close();
    }
  });

  it('answers a damaged stored group (cut short, [], edited, its checksum removed, another group copied over it) with a neutral 409, logs the path, and changes nothing', async () => {
    const root = join(dir, 'store');
    const store = await openFileSessionStore(root);
    const log: string[] = [];
    const toy = await startToyServer({ store, log: (line) => log.push(line) });
    try {
      const ask = async (): Promise<string> => ((await (await post(`${toy.url}/chat/completions`, { ...chat, n: 2 })).json()) as Json).id as string;
      const other = await ask();
      const file = (id: string) => join(root, 'groups', `${id}.json`);
      const edit = (change: (group: Json) => void) => async (id: string) => {
        const group = JSON.parse(await readFile(file(id), 'utf8')) as Json;
        change(group);
        await writeFile(file(id), JSON.stringify(group));
      };
      const damages: Array<[string, (id: string) => Promise<void>]> = [
        ['cut short', (id) => writeFile(file(id), '{"id": tr')],
        ['an empty list', (id) => writeFile(file(id), '[]')],
        ['an edited completion text', edit((g) => ((g.completions as Json[])[0].text = 'edited'))],
        ['an edited prompt', edit((g) => ((g.messages as Json[])[0].content = 'edited'))],
        ['edited token ids', edit((g) => ((g.completions as Json[])[1].tokenIds = [1, 2, 3]))],
        ['its checksum removed, then edited', edit((g) => {
          delete g.integrity;
          (g.completions as Json[])[0].text = 'edited';
        })],
        ['another group copied over it', async (id) => writeFile(file(id), await readFile(file(other), 'utf8'))],
      ];
      for (const [name, damage] of damages) {
        const id = await ask();
        await damage(id);
        const before = await readFile(file(id), 'utf8');
        for (const res of [await fetch(`${toy.url}/groups/${id}`), await post(`${toy.url}/feedback`, { group_id: id, rewards: [1, 0] })]) {
          expect([name, res.status]).toEqual([name, 409]);
          const text = await res.text();
          expect(text).not.toContain(root);
          expect(text).not.toMatch(/\.json/);
          expect(JSON.parse(text).error).toMatchObject({ code: 'store_corrupt', message: expect.stringMatching(/server's log/) });
        }
        // Nothing was told or rewritten.
        expect(await readFile(file(id), 'utf8'), name).toBe(before);
      }
      expect(log.some((line) => line.includes(join(root, 'groups')))).toBe(true);
      expect(log.some((line) => /has no checksum/.test(line))).toBe(true);
      // The undamaged group is served and told as before.
      expect((await post(`${toy.url}/feedback`, { group_id: other, rewards: [1, 0] })).status).toBe(200);
    } finally {
      await toy.server.close();
    }
  });

  it('answers malformed percent-encoding in a path with 400, not 500', async () => {
    const toy = await startToyServer();
    try {
      for (const id of ['%E0%A4%A', '%', '%ZZ', '%C0%AF']) {
        const res = await fetch(`${toy.url}/groups/${id}`);
        expect([id, res.status]).toEqual([id, 400]);
        expect((await res.json()).error.code).toBe('invalid_url');
      }
    } finally {
      await toy.server.close();
    }
  });
});

describe('the feedback file', () => {
  it('is checked at start-up: an unwritable path fails there, not at the first feedback', async () => {
    const policy = createToyPolicy();
    await expect(serve({ policy, port: 0, feedbackFile: join(dir, 'no-such-folder', 'f.jsonl') })).rejects.toThrow(/feedbackFile: .*cannot be opened for appending \(ENOENT\)/);
    await mkdir(join(dir, 'a-folder'));
    await expect(serve({ policy, port: 0, feedbackFile: join(dir, 'a-folder') })).rejects.toThrow(/EISDIR/);
  });

  it('a write that fails later leaves the group untold, and a retry once it is writable tells it', async () => {
    const feedbackFile = join(dir, 'later.jsonl');
    const toy = await startToyServer({ feedbackFile });
    try {
      const asked: Json = await (await post(`${toy.url}/chat/completions`, { ...chat, n: 2 })).json();
      // The file becomes a folder: every append now fails (as a full or read-only disk would).
      await rm(feedbackFile);
      await mkdir(feedbackFile);
      const failed = await post(`${toy.url}/feedback`, { group_id: asked.id, rewards: [1, 0] });
      // A shaped 503 that says the group stays untold (no 500, no path).
      expect(failed.status).toBe(503);
      const { error } = (await failed.json()) as { error: Json };
      expect(error).toMatchObject({ code: 'feedback_log_unwritable', type: 'server_error', message: expect.stringMatching(/stays untold/) });
      expect(error.message).not.toContain(feedbackFile);
      expect(((await (await fetch(`${toy.url}/groups/${asked.id}`)).json()) as Json).feedback).toBeNull();
      await rm(feedbackFile, { recursive: true });
      expect((await post(`${toy.url}/feedback`, { group_id: asked.id, rewards: [1, 0] })).status).toBe(200);
      expect(((await (await fetch(`${toy.url}/groups/${asked.id}`)).json()) as Json).feedback).not.toBeNull();
      expect((await readFile(feedbackFile, 'utf8')).trim().split('\n')).toHaveLength(2);
    } finally {
      await toy.server.close();
    }
  });
});

describe('told completions', () => {
  it('are capped like n, before the model scores any', async () => {
    const toy = await startToyServer({ maxN: 8 });
    try {
      const many = Array.from({ length: 9 }, (_, i) => ({ text: `c${i}`, reward: i }));
      const asked: Json = await (await post(`${toy.url}/chat/completions`, { ...chat, n: 2 })).json();
      for (const body of [{ prompt: 'p', completions: many }, { group_id: asked.id, completions: many }]) {
        const res = await post(`${toy.url}/feedback`, body);
        expect(res.status).toBe(400);
        expect((await res.json()).error).toMatchObject({ param: 'completions', message: expect.stringMatching(/at most 8/) });
      }
      expect(((await (await fetch(`${toy.url}/groups/${asked.id}`)).json()) as Json).completions).toHaveLength(2);
      expect((await post(`${toy.url}/feedback`, { prompt: 'p', completions: many.slice(0, 8) })).status).toBe(200);
    } finally {
      await toy.server.close();
    }
  });
});

describe('HEAD and the request log', () => {
  it('answers HEAD on GET routes without a body', async () => {
    const toy = await startToyServer();
    try {
      const health = await raw(toy.server.port, 'HEAD', '/health', {});
      expect(health.status).toBe(200);
      expect(health.body).toBe('');
      expect(health.headers['content-type']).toMatch(/application\/json/);
      expect((await raw(toy.server.port, 'HEAD', '/v1/models', {})).status).toBe(200);
      const wrong = await raw(toy.server.port, 'DELETE', '/health', {});
      expect(wrong.status).toBe(405);
      expect(wrong.headers.allow).toBe('GET, HEAD');
    } finally {
      await toy.server.close();
    }
  });

  it('logs a request whose client went away as aborted, not as a 200', async () => {
    const log: string[] = [];
    const toy: ToyServer = await startToyServer({ log: (line) => log.push(line), toy: { stepDelayMs: 20 } });
    try {
      const res = await post(`${toy.url}/chat/completions`, { ...chat, max_tokens: 4000, stream: true });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      while (!log.some((line) => line.startsWith('POST /v1/chat/completions'))) await new Promise((r) => setTimeout(r, 5));
      const line = log.find((l) => l.startsWith('POST /v1/chat/completions'))!;
      expect(line).toMatch(/aborted/);
      expect(line).not.toMatch(/ 200 \d+ms$/);
      await post(`${toy.url}/chat/completions`, chat);
      while (log.length < 2) await new Promise((r) => setTimeout(r, 5));
      expect(log[1]).toMatch(/^POST \/v1\/chat\/completions 200 \d+ms$/);
    } finally {
      await toy.server.close();
    }
  });
});
