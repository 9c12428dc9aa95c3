/**
 * A page's model file streamed once by webgrpo (streamed-model.ts) in real Chromium on
 * onnxruntime-web's WebAssembly, served over HTTP on 127.0.0.1: transformers.js never fetches the
 * file (it is given the graph without its weights, from the cache hook its loading looks in), the
 * session gets each weight as an array of its own, freed once the session is made, and the
 * log-probs are onnxruntime-node's (a hub model's file put in the browser's cache first, as
 * transformers.js would have, and streamed from there); read again for the LoRA engine, the file is streamed once more
 * (not twice: the graph, then the weights). A user's own custom cache still answers every other file and
 * is left in place; a file that is not an ONNX protobuf is left to transformers.js as before.
 */
import { cp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { TINY_DIR } from './fixtures.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const GARBAGE = 'build/test-fixtures/streamed-model/garbage';
const MODEL = '/models/webgrpo-tiny';
const PROMPT = 'A model streamed once';
const COMPLETIONS = [
  [5, 9, 13, 2],
  [7, 7, 1],
];

interface Loaded {
  logprobs: number[][];
  pageFetches: string[];
  graphFetches: string[];
  graphPieces: string[];
  transformersFetches: string[];
  sessions: Array<{ bytes: number; external: number; own: boolean; freed: boolean }>;
  restored: boolean;
  ownCacheAsked: string[];
}
interface Failed {
  error?: { name: string; code?: string; message: string };
  pageFetches: string[];
  transformersFetches: string[];
  customCache: boolean;
}
type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string } };

let session: BrowserSession;
let page: Page;
let node: number[][];
beforeAll(async () => {
  // A folder like the tiny model's whose model file is no ONNX protobuf.
  const garbage = join(root, GARBAGE);
  await cp(TINY_DIR, garbage, { recursive: true });
  await writeFile(join(garbage, 'onnx', 'model.onnx'), Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
  const policy = await loadOnnxPolicy({ model: TINY_DIR });
  node = (await policy.scoreCompletions({ prompt: PROMPT, completions: COMPLETIONS })).logprobs;
  await policy.dispose();
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/streamed-model.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(async () => {
  await session?.close();
  await rm(join(root, 'build/test-fixtures/streamed-model'), { recursive: true, force: true });
});
expectNoConsoleErrors(() => session);

async function inPage<T>(name: 'load' | 'hub' | 'fail', ...args: unknown[]): Promise<T> {
  const outcome = (await page.evaluate(([n, a]) => (window as unknown as { streamed: Record<string, (...x: unknown[]) => Promise<unknown>> }).streamed[n](...a), [name, args] as const)) as Outcome<T>;
  if (!outcome.ok) throw new Error(`${name} failed in the page: ${outcome.error.name}: ${outcome.error.message}`);
  return outcome.value;
}

function maxGap(a: number[][], b: number[][]): number {
  expect(a.map((row) => row.length)).toEqual(b.map((row) => row.length));
  return Math.max(...a.flatMap((row, i) => row.map((x, j) => Math.abs(x - b[i][j]))));
}

describe('a page streams its model file once', () => {
  it('transformers.js never fetches it; the session gets each weight in an array of its own, freed after, and scores as onnxruntime-node', async () => {
    const r = await inPage<Loaded>('load', MODEL, PROMPT, COMPLETIONS, false);
    expect(r.transformersFetches).toEqual([]);
    expect(r.pageFetches).toEqual([`${MODEL}/onnx/model.onnx`]);
    expect(r.sessions).toHaveLength(1);
    const [made] = r.sessions;
    expect(made.external).toBeGreaterThan(5);
    expect(made.own).toBe(true);
    expect(made.freed).toBe(true);
    expect(made.bytes).toBeLessThan(3_026_417 / 4);
    expect(r.restored).toBe(true);
    expect(maxGap(r.logprobs, node)).toBeLessThan(1e-5);
    // Read again for the engine, the file's graph and weights come in one pass too.
    expect(r.graphFetches).toEqual([`${MODEL}/onnx/model.onnx`]);
    expect(r.graphPieces.length).toBe(made.external);
    expect(r.graphPieces.every((name) => name.startsWith('model.onnx@'))).toBe(true);
  }, 60_000);

  it("chains to a user's own custom cache for every other file and leaves it in place", async () => {
    const r = await inPage<Loaded>('load', MODEL, PROMPT, COMPLETIONS, true);
    expect(r.restored).toBe(true);
    expect(r.ownCacheAsked).toContain(`${MODEL}/config.json`);
    expect(r.ownCacheAsked.filter((request) => request.endsWith('.onnx'))).toEqual([]);
    expect(r.transformersFetches).toEqual([]);
    expect(maxGap(r.logprobs, node)).toBeLessThan(1e-5);
  }, 60_000);

  it('puts a hub model file in the browser cache before it streams it, and streams it from there the next time', async () => {
    const { runs, cachedBytes } = await inPage<{ runs: Array<Pick<Loaded, 'logprobs' | 'pageFetches' | 'transformersFetches'> & { sessions: Array<{ external: number; own: boolean }> }>; cachedBytes: number }>('hub', 'webgrpo-tiny', PROMPT, COMPLETIONS);
    const url = `${await page.evaluate(() => location.origin)}/models/webgrpo-tiny/onnx/model.onnx`;
    expect(runs.map((r) => r.pageFetches)).toEqual([[url], []]);
    for (const r of runs) {
      expect(r.transformersFetches).toEqual([]);
      expect(r.sessions).toHaveLength(1);
      expect(r.sessions[0].own).toBe(true);
      expect(r.sessions[0].external).toBeGreaterThan(5);
      expect(maxGap(r.logprobs, node)).toBeLessThan(1e-5);
    }
    expect(cachedBytes).toBe(3_026_417);
  }, 60_000);

  it('leaves a file that is no ONNX protobuf to transformers.js, which fails on it as before', async () => {
    const r = await inPage<Failed>('fail', `/${GARBAGE}`);
    expect(r.error).toMatchObject({ name: 'ModelLoadError', code: 'ModelLoad' });
    expect(r.transformersFetches).toEqual([`/${GARBAGE}/onnx/model.onnx`]);
    expect(r.customCache).toBe(false);
  }, 60_000);
});
