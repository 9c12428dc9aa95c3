/**
 * The server under a small heap: `webgrpo serve` on the bundled tiny model, in a child process
 * with a 300 MB heap, answers 2,000 requests for 64 completions with 20 alternatives per token over
 * real HTTP, and what it retains after a full collection stops growing once its group memory
 * is full (each group is about 100 KB; kept all, 2,000 of them outgrow the heap's growth bound
 * below many times over, and a server that kept every group died at about request 75 of 64 tokens).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { post } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = join(root, 'node_modules/.bin/tsx');

const REQUESTS = 2000;
const CLIENTS = 8;
const MiB = 1 << 20;

let child: ChildProcess;
let url: string;
let stdout = '';
let stderr = '';
let exited: number | null | undefined;

beforeAll(async () => {
  child = spawn(tsx, [join(root, 'test/serve/serve-measured.ts'), '--model', 'public/models/webgrpo-tiny', '--port', '0'], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '--max-old-space-size=300 --expose-gc' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (d) => (stderr += d));
  child.on('exit', (code) => (exited = code));
  url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code} before listening:\n${stdout}\n${stderr}`)));
  });
}, 60_000);

afterAll(() => {
  if (exited === undefined) child.kill('SIGTERM');
});

/** The server's heap after a full collection, in bytes. */
async function retained(): Promise<{ heap: number; rss: number }> {
  const seen = stdout.length;
  child.stdin!.write('\n');
  for (;;) {
    const match = /memory (\d+) (\d+)\n/.exec(stdout.slice(seen));
    if (match) return { heap: Number(match[1]), rss: Number(match[2]) };
    if (exited !== undefined) throw new Error(`the server died (exit ${exited}):\n${stderr.slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('answers 2,000 large requests under a 300 MB heap with flat retained memory', async () => {
  const samples: { at: number; heap: number; rss: number }[] = [];
  let next = 0;
  let answered = 0;
  async function client(): Promise<void> {
    while (next < REQUESTS) {
      const seed = next++;
      const res = await post(`${url}/chat/completions`, {
        model: 'webgrpo-tiny',
        messages: [{ role: 'user', content: `question ${seed}` }],
        n: 64,
        max_tokens: 1,
        logprobs: true,
        top_logprobs: 20,
        seed,
      });
      const body = await res.json();
      expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.choices).toHaveLength(64);
      expect(body.choices[0].logprobs.content[0].top_logprobs).toHaveLength(20);
      answered += 1;
      if (answered % 500 === 0) samples.push({ at: answered, ...(await retained()) });
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, client));
  expect(answered).toBe(REQUESTS);

  // The store is full by request 1,000 (its bound holds about 700 such groups): from there on the
  // retained heap stays within a few groups' worth plus collector noise.
  const [, half, , end] = samples;
  const growth = end.heap - half.heap;
  expect(growth, JSON.stringify(samples)).toBeLessThan(16 * MiB);
  expect(end.heap, JSON.stringify(samples)).toBeLessThan(200 * MiB);

  const health = await (await fetch(url.replace(/\/v1$/, '/health'))).json();
  expect(health.groups.bytes).toBeLessThanOrEqual(health.groups.max_bytes);
  // The default bound is a quarter of the heap limit (about 87 of 348 MiB here).
  expect(health.groups.max_bytes).toBeLessThan(100 * MiB);
  expect(health.groups.evicted).toBeGreaterThan(REQUESTS / 2);
}, 600_000);
