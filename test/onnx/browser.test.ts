/**
 * webgrpo/onnx in real headless Chromium: onnxruntime-web on WebAssembly and on WebGPU
 * (SwiftShader), served by Vite from the sources, with the bundled model from public/.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { SampledToken, SamplingConfig } from '../../lib/policy/sampling.js';
import type { GenerateGroupOptions, GroupResult, ScoreResult } from '../../lib/core/policy.js';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { drawAgreement, greedyAgreement, topAgreement } from '../browser/near-ties.js';
import { TINY_DIR } from './fixtures.js';

type Device = 'wasm' | 'webgpu';
type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; code?: string; message: string } };
interface OnnxPage {
  load(device: Device): Promise<Outcome<{ backend: string; note?: string }>>;
  generate(device: Device, options: GenerateGroupOptions): Promise<Outcome<GroupResult>>;
  generateGroups(device: Device, list: GenerateGroupOptions[]): Promise<Outcome<GroupResult[]>>;
  generateAndAbort(device: Device, options: GenerateGroupOptions, afterTokens: number): Promise<Outcome<{ result: GroupResult; passesAfterAbort: number }>>;
  score(device: Device, options: { prompt: string; completions: number[][]; temperature?: number; topLogprobs?: number }): Promise<Outcome<ScoreResult>>;
  stats(device: Device): { forwardPasses: number; readbackBytes: number; fullRowBytes: number; rows: number };
  repeat(device: Device, options: GenerateGroupOptions, times: number): Promise<Outcome<GpuMemory[]>>;
  gpuMemory(): GpuMemory;
  dispose(device: Device): Promise<Outcome<void>>;
  kernels(configs: SamplingConfig[]): Promise<Outcome<Array<{ dtype: string; config: SamplingConfig | 'score'; gpu: Array<SampledToken & Score>; cpu: Array<SampledToken & Score>; nearby?: number[][] }>>>;
  transformersGenerate(): Promise<Outcome<{ promptLength: number; ids: number[]; text: string }>>;
}
interface GpuMemory {
  live: number;
  bytes: number;
  created: number;
}
interface Score {
  logprob: number;
  entropy: number;
}

let session: BrowserSession;
let page: Page;

/** Calls window.onnx[name](...args) in the page and unwraps its outcome. */
async function call<K extends keyof OnnxPage>(name: K, ...args: Parameters<OnnxPage[K]>): Promise<Awaited<ReturnType<OnnxPage[K]>> extends Outcome<infer T> ? T : Awaited<ReturnType<OnnxPage[K]>>> {
  const result = await page.evaluate(
    ([n, a]) => (window as unknown as { onnx: Record<string, (...x: unknown[]) => unknown> }).onnx[n](...a),
    [name, args] as const,
  );
  if (result && typeof result === 'object' && 'ok' in result) {
    const outcome = result as Outcome<unknown>;
    if (!outcome.ok) throw new Error(`${name} failed in the page: ${outcome.error.name}: ${outcome.error.message}`);
    return outcome.value as never;
  }
  return result as never;
}

/** Each test loads what it needs (a no-op when already loaded), so any one can run alone. */
const ready = (device: Device) => call('load', device);

/** Max |generated - scored| over all tokens of a group. */
async function scoreGap(device: Device, options: GenerateGroupOptions & { prompt: string }, group: GroupResult): Promise<number> {
  const scored = await call('score', device, { prompt: options.prompt, completions: group.completions.map((c) => c.tokenIds), temperature: options.temperature });
  let gap = 0;
  group.completions.forEach((c, i) => c.logprobs.forEach((lp, t) => (gap = Math.max(gap, Math.abs(lp - scored.logprobs[i][t])))));
  return gap;
}

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/onnx.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(() => session?.close());

const prompt = 'The bundled model says';

describe('WebAssembly', () => {
  it('loads the bundled model from /models/webgrpo-tiny/ with onnxruntime-web\'s own wasm files', async () => {
    expect(await call('load', 'wasm')).toMatchObject({ backend: 'wasm' });
  });

  it('samples seeded groups whose log-probs scoring reproduces to 1e-4', async () => {
    await ready('wasm');
    const options = { prompt, groupSize: 4, maxNewTokens: 16, seed: 9, temperature: 0.9, topK: 40, topP: 0.95 };
    const group = await call('generate', 'wasm', options);
    expect(group.usage.completionTokens).toBeGreaterThan(4);
    expect(await scoreGap('wasm', options, group)).toBeLessThan(1e-4);
    expect(await call('generate', 'wasm', options)).toEqual(group);
  });

  it('aborts within one decode step', async () => {
    await ready('wasm');
    const { result, passesAfterAbort } = await call('generateAndAbort', 'wasm', { prompt, groupSize: 3, maxNewTokens: 40, seed: 1 }, 7);
    expect(passesAfterAbort).toBeLessThanOrEqual(1);
    expect(result.completions.some((c) => c.finishReason === 'abort')).toBe(true);
    for (const c of result.completions) expect(c.tokenIds.length).toBeLessThanOrEqual(3);
  });

  it('is a genuine transformers.js model in the browser: AutoModelForCausalLM.generate() runs on it', async () => {
    const out = await call('transformersGenerate');
    expect(out.ids.length).toBeGreaterThan(out.promptLength);
    expect(typeof out.text).toBe('string');
  });
});

describe('WebGPU (SwiftShader)', () => {
  it('loads on the WebGPU execution provider', async () => {
    expect(await call('load', 'webgpu')).toMatchObject({ backend: 'webgpu' });
  }, 120_000);

  it('samples and scores on the GPU: log-probs agree to 1e-4, greedy matches WASM, a step reads back 16 bytes per row', async () => {
    await Promise.all([ready('webgpu'), ready('wasm')]);
    const options = { prompt, groupSize: 4, maxNewTokens: 10, seed: 9, temperature: 0.9, topK: 40, topP: 0.95 };
    const before = await call('stats', 'webgpu');
    const group = await call('generate', 'webgpu', options);
    const after = await call('stats', 'webgpu');
    const rows = after.rows - before.rows;
    expect((after.readbackBytes - before.readbackBytes) / rows).toBe(16);
    expect((after.fullRowBytes - before.fullRowBytes) / rows).toBe(102 * 4);
    expect(await scoreGap('webgpu', options, group)).toBeLessThan(1e-4);

    // Greedy: the same tokens wherever the top two are further apart than the backends' 1e-3.
    const greedy = { prompt, groupSize: 2, maxNewTokens: 10, temperature: 0, topLogprobs: 2 };
    const [gpu, wasm] = [await call('generate', 'webgpu', greedy), await call('generate', 'wasm', greedy)];
    const agreement = gpu.completions.map((c, i) => greedyAgreement(c, wasm.completions[i], 1e-3, `greedy row ${i}`));
    expect(agreement.reduce((n, a) => n + a.compared, 0), JSON.stringify(agreement)).toBeGreaterThan(0);
  }, 180_000);

  it('reduces top_logprobs on the GPU: 8 bytes per alternative read back, the same alternatives WASM scores', async () => {
    await Promise.all([ready('webgpu'), ready('wasm')]);
    const k = 6;
    const options = { prompt, groupSize: 3, maxNewTokens: 8, seed: 2, temperature: 0.8, topLogprobs: k };
    const before = await call('stats', 'webgpu');
    const group = await call('generate', 'webgpu', options);
    const after = await call('stats', 'webgpu');
    expect((after.readbackBytes - before.readbackBytes) / (after.rows - before.rows)).toBe(16 + 8 * k);
    const completions = group.completions.map((c) => c.tokenIds);
    const [gpuScored, wasmScored] = [
      await call('score', 'webgpu', { prompt, completions, temperature: 0.8, topLogprobs: k }),
      await call('score', 'wasm', { prompt, completions, temperature: 0.8, topLogprobs: k }),
    ];
    const total = { compared: 0, ties: 0 };
    group.completions.forEach((c, i) =>
      c.topLogprobs!.forEach((top, t) => {
        expect(top).toHaveLength(k);
        // The GPU's scoring kernel to 1e-4; WASM (float64 on the host) to the cross-backend 1e-3.
        // Ranks closer than that to a neighbour may swap, and are counted instead of compared.
        for (const [other, tolerance] of [[gpuScored.topLogprobs![i][t], 1e-4], [wasmScored.topLogprobs![i][t], 1e-3]] as const) {
          const agreement = topAgreement(top, other, tolerance, `row ${i} step ${t}`);
          total.compared += agreement.compared;
          total.ties += agreement.ties;
        }
      }),
    );
    expect(total.compared, `${total.compared} ranks compared, ${total.ties} near ties`).toBeGreaterThan(total.ties);
  }, 180_000);

  it('batches groups of different prompt lengths on the GPU (cache merged and trimmed buffer to buffer): each as when sampled alone', async () => {
    await ready('webgpu');
    const list = [
      { prompt: 'A', groupSize: 2, maxNewTokens: 12, seed: 1 },
      { prompt: `${prompt} at some length, to pad the other rows`, groupSize: 3, maxNewTokens: 6, seed: 2, temperature: 0.7 },
      { prompt, groupSize: 2, maxNewTokens: 10, temperature: 0 },
    ];
    const batched = await call('generateGroups', 'webgpu', list);
    for (const [i, options] of list.entries()) {
      const alone = await call('generate', 'webgpu', options);
      expect(batched[i].completions.map((c) => c.tokenIds)).toEqual(alone.completions.map((c) => c.tokenIds));
      alone.completions.forEach((c, r) => c.logprobs.forEach((lp, t) => expect(Math.abs(lp - batched[i].completions[r].logprobs[t])).toBeLessThan(1e-4)));
    }
  }, 180_000);

  it('runs the sampling and scoring kernels exactly like lib/policy/sampling.ts, in float32 and float16', async () => {
    const base = { temperature: 1, topK: 0, topP: 1, minP: 0 };
    const configs: SamplingConfig[] = [
      base,
      { ...base, temperature: 0.6 },
      { ...base, temperature: 0 },
      { ...base, topK: 1 },
      { ...base, topK: 7 },
      { ...base, topK: 120 },
      { ...base, topP: 0.2 },
      { ...base, topP: 0.9 },
      { ...base, minP: 0.2 },
      { temperature: 0.8, topK: 50, topP: 0.7, minP: 0.05 },
    ];
    const report = await call('kernels', configs);
    expect(report).toHaveLength(2 * (configs.length + 1));
    const total = { compared: 0, ties: 0 };
    for (const { dtype, config, gpu, cpu, nearby } of report) {
      const label = `${dtype} ${JSON.stringify(config)}`;
      if (config === 'score') {
        cpu.forEach((c, i) => {
          expect(Math.abs(gpu[i].logprob - c.logprob), label).toBeLessThan(1e-4);
          expect(Math.abs(gpu[i].entropy - c.entropy), label).toBeLessThan(1e-4);
        });
        continue;
      }
      // The same draw wherever it does not hinge on rounding; at a near tie, one the reference makes nearby.
      const agreement = drawAgreement(gpu, cpu, nearby!, 1e-4, label);
      total.compared += agreement.compared;
      total.ties += agreement.ties;
    }
    // Greedy on logits full of exact ties is always a near tie; most sampled draws are not.
    expect(total.compared, `${total.compared} draws compared, ${total.ties} near ties`).toBeGreaterThan(total.ties);
  }, 120_000);

  it('keeps GPU memory flat over 100 calls and frees its buffers on dispose', async () => {
    await ready('webgpu');
    const options = { prompt, groupSize: 2, maxNewTokens: 2 };
    await call('repeat', 'webgpu', options, 3); // warm: onnxruntime's buffer cache fills up
    const samples = await call('repeat', 'webgpu', options, 100);
    expect(samples).toHaveLength(100);
    const created = samples[99].created - samples[0].created;
    expect(created).toBeGreaterThan(100); // the loop really allocates: each call gathers the cache
    expect(samples[99].live).toBe(samples[0].live);
    expect(samples[99].bytes).toBe(samples[0].bytes);
    const beforeDispose = await call('gpuMemory');
    await call('dispose', 'webgpu');
    expect((await call('gpuMemory')).live).toBeLessThan(beforeDispose.live);
  }, 300_000);
});

describe('across backends', () => {
  it('scores one fixed token sequence the same in Node (CPU), Chromium WASM and Chromium WebGPU to 1e-3', async () => {
    const completions = [
      [72, 76, 83, 83, 86, 2],
      [19, 24, 33, 5],
    ];
    const node: OnnxPolicy = await loadOnnxPolicy({ model: TINY_DIR });
    const cpu = await node.scoreCompletions({ prompt, completions });
    await node.dispose();
    await Promise.all([ready('webgpu'), ready('wasm')]);
    for (const device of ['wasm', 'webgpu'] as const) {
      const browser = await call('score', device, { prompt, completions });
      cpu.logprobs.forEach((row, i) =>
        row.forEach((lp, t) => {
          expect(Math.abs(browser.logprobs[i][t] - lp), `${device} logprob ${i},${t}`).toBeLessThan(1e-3);
          expect(Math.abs(browser.entropies[i][t] - cpu.entropies[i][t]), `${device} entropy ${i},${t}`).toBeLessThan(1e-3);
        }),
      );
    }
    expect(session.errors).toEqual([]);
  }, 180_000);
});
