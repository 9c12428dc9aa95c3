/**
 * webgrpo/grad in real headless Chromium on WebGPU (SwiftShader, a CPU implementation of WebGPU, so
 * onnxruntime-web's WebGPU kernels run for real but slowly): the head graphs on the WebGPU
 * execution provider against finite differences and against the same graphs on WASM, zero-B
 * sampling equal to the base model, one batch through a WASM and a WebGPU policy on the bundled
 * model, and a small learning run whose checkpoint lands in the real IndexedDB.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupResult } from '../../lib/core/policy.js';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';

type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string; stack?: string } };

let session: BrowserSession;
let page: Page;

async function call<T>(name: string, ...args: unknown[]): Promise<T> {
  const result = (await page.evaluate(
    ([n, a]) => (window as unknown as { grad: Record<string, (...x: unknown[]) => unknown> }).grad[n as string](...(a as unknown[])),
    [name, args] as const,
  )) as Outcome<T>;
  if (!result.ok) throw new Error(`${name} failed in the page: ${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
  return result.value;
}

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/grad.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(() => session?.close());
// onnxruntime's warnings (nodes it keeps on the CPU beside WebGPU) would show as console errors.
expectNoConsoleErrors(() => session);

interface Check {
  fdA: number;
  fdB: number;
  scaleA: number;
  scaleB: number;
  vsCpu: Record<string, number>;
  moved: number;
}

describe("the head graphs on onnxruntime-web's WebGPU execution provider", () => {
  it.each([
    ['dapo with KL and entropy bonus, T = 0.7', 1, undefined],
    ['bnpo, sequence-level ratios', 3, { loss: { lossType: 'bnpo', importanceSamplingLevel: 'sequence', beta: 0.02, entropyCoef: 0.02 } }],
  ])('matches finite differences of dA and dB to 1e-3, and the head graphs on WASM to 1e-4: %s', async (_, seed, options) => {
    const r = await call<Check>('check', seed, options);
    expect(r.fdA).toBeLessThan(1e-3);
    expect(r.fdB).toBeLessThan(1e-3);
    expect(r.scaleA).toBeGreaterThan(1e-3);
    expect(r.scaleB).toBeGreaterThan(1e-3);
    for (const [key, value] of Object.entries(r.vsCpu)) expect(value, key).toBeLessThan(1e-4);
    expect(r.moved).toBeGreaterThan(1e-3);
  });
});

describe('the bundled model on WebGPU', () => {
  it('with B = 0, the adapted policy samples exactly like the base model', async () => {
    const options = { prompt: 'Zero B', groupSize: 4, maxNewTokens: 8, seed: 5 };
    const r = await call<{ base: GroupResult; adapted: GroupResult; engine: string }>('zeroB', options);
    expect(r.engine).toBe('gpu');
    expect(r.adapted).toEqual(r.base);
  });

  it('one batch gives the same update on a WebAssembly and a WebGPU policy (the head graphs on each backend), to 1e-4', async () => {
    type Side = { engine: string; first: Record<string, number>; second: Record<string, number>; a: number[]; b: number[] };
    const r = await call<{ wasm: Side; webgpu: Side }>('compare');
    expect(r.wasm.engine).toBe('host');
    expect(r.webgpu.engine).toBe('gpu');
    for (const iteration of ['first', 'second'] as const) {
      for (const key of ['loss', 'kl', 'entropy', 'clipRatioRegion', 'rewardMean', 'advantageStd'] as const) {
        expect(Math.abs(r.webgpu[iteration][key] - r.wasm[iteration][key]), `${iteration} ${key}`).toBeLessThan(1e-4);
      }
      expect(Math.abs(r.webgpu[iteration].gradNorm - r.wasm[iteration].gradNorm) / r.wasm[iteration].gradNorm).toBeLessThan(1e-4);
    }
    // The second update's numbers agree too, so the first update moved both adapters alike. (The
    // weights themselves are not compared element by element: Adam divides each gradient by its own
    // running size, so for vocabulary entries whose gradient is float32 noise the two engines take
    // different steps of up to lr; the engine test above compares weights on a case without such.)
    expect(r.webgpu.second.loss).not.toBe(r.webgpu.first.loss);
    expect(Math.max(...r.webgpu.b.map(Math.abs))).toBeGreaterThan(0.01);
  });

  // Small, because SwiftShader is slow: one group of 16 per step, 8 tokens, two updates per batch.
  it('learns "digits" in 7 steps, checkpointed in IndexedDB', async () => {
    const r = await call<{ rewards: number[]; engine: string; checkpointStep: number; checkpointMatches: boolean }>('learn', {
      task: process.env.WEBGRPO_GRAD_TASK ?? 'digits',
      seed: Number(process.env.WEBGRPO_GRAD_SEED ?? 3),
      steps: 7,
      batchSize: 1,
      groupSize: 16,
      maxNewTokens: 8,
      numIterations: 2,
    });
    expect(r.engine).toBe('gpu');
    expect(r.rewards).toHaveLength(7);
    const start = (r.rewards[0] + r.rewards[1]) / 2;
    const end = (r.rewards[5] + r.rewards[6]) / 2;
    expect(end - start, `rewards ${r.rewards.map((x) => x.toFixed(2)).join(' ')}`).toBeGreaterThan(0.2);
    expect(r.checkpointStep).toBe(7);
    expect(r.checkpointMatches).toBe(true);
  }, 240_000);
});
