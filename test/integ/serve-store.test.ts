/**
 * `webgrpo serve --store <dir>` as a real process (the toy policy in place of the ONNX loader,
 * test/fixtures/serve-toy.ts): groups and their feedback survive a restart on the same folder.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySessionStore, StoreQuotaError, type GroupRecord } from '../../lib/index.js';
import { computeAdvantages } from '../../lib/math.js';
import { post, startToyServer } from '../serve/helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = join(root, 'node_modules/.bin/tsx');

interface Started {
  url: string;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

function start(args: string[]): Promise<Started> {
  const child = spawn(tsx, [join(root, 'test/fixtures/serve-toy.ts'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolve({ url: match[1], stderr: () => stderr, stop: () => (child.kill('SIGTERM'), exit) });
    });
    void exit.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${stdout}\n${stderr}`)));
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-serve-store-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('webgrpo serve --store', () => {
  it('answers GET /v1/groups/:id with the group and its feedback after a restart on the same folder', async () => {
    const store = join(dir, 'store');
    const first = await start(['--model', 'fixtures/toy', '--port', '0', '--store', store]);
    expect(first.stderr()).toContain(`groups and feedback are kept in ${store}`);
    const asked = (await (await post(`${first.url}/chat/completions`, { model: 'toy', messages: [{ role: 'user', content: 'Sort: b, a' }], n: 3, max_tokens: 6, seed: 9 })).json()) as { id: string };
    const told = await post(`${first.url}/feedback`, { group_id: asked.id, rewards: [1, 0, 0.25] });
    expect(told.status).toBe(200);
    const before = await (await fetch(`${first.url}/groups/${asked.id}`)).json();
    expect(await first.stop()).toBe(0);

    const second = await start(['--model', 'fixtures/toy', '--port', '0', '--store', store]);
    const res = await fetch(`${second.url}/groups/${asked.id}`);
    expect(res.status).toBe(200);
    const after = (await res.json()) as { completions: Array<{ reward: number; advantage: number }>; feedback: { mean: number } | null };
    expect(after).toEqual(before);
    expect(after.completions.map((c) => c.advantage)).toEqual(computeAdvantages([1, 0, 0.25], { groupSize: 3 }).advantages);
    expect(after.feedback?.mean).toBeCloseTo(1.25 / 3, 12);
    // The restored group takes more feedback, by completion id.
    const again = await post(`${second.url}/feedback`, { rewards: { [`${asked.id}-1`]: 1 } });
    expect(((await again.json()) as { groups: Array<{ completions: Array<{ reward: number }> }> }).groups[0].completions.map((c) => c.reward)).toEqual([1, 1, 0.25]);
    expect((await fetch(`${second.url}/groups/unknown`)).status).toBe(404);
    expect(await second.stop()).toBe(0);
  });
});

describe('a full store under the server', () => {
  it('answers 507 with an OpenAI-style error, keeps the group as it was, and stays up', async () => {
    let full = false;
    const memory = new MemorySessionStore();
    const store = {
      get: (id: string) => memory.get(id),
      list: () => memory.list(),
      put: async (group: GroupRecord) => {
        if (full) throw new StoreQuotaError('Could not store the group: the disk is full (ENOSPC). Nothing of this write was kept; free space and try again.');
        await memory.put(group);
      },
    };
    const { server, url } = await startToyServer({ store });
    try {
      const asked = (await (await post(`${url}/completions`, { model: 'toy', prompt: 'Sort: b, a', n: 2, max_tokens: 4 })).json()) as { id: string };
      full = true;
      const res = await post(`${url}/feedback`, { group_id: asked.id, rewards: [1, 0] });
      expect(res.status).toBe(507);
      expect(await res.json()).toMatchObject({ error: { code: 'insufficient_storage', type: 'server_error', message: expect.stringMatching(/storage is full/) } });
      full = false;
      expect(((await (await fetch(`${url}/groups/${asked.id}`)).json()) as { feedback: unknown }).feedback).toBeNull();
      expect((await post(`${url}/feedback`, { group_id: asked.id, rewards: [1, 0] })).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
