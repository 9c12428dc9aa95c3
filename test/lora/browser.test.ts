/**
 * The `lora` method in real headless Chromium: onnxruntime-web samples on WebAssembly and on
 * WebGPU (SwiftShader, a CPU implementation of WebGPU: correct, not fast), the adapter trains on
 * the training graphs in the policy's own onnxruntime and backend (WASM, or the WebGPU execution
 * provider), the sampler follows it as graph inputs, and every step's checkpoint lands in the
 * real IndexedDB. The next step's sampled log-probs equal the training graphs' forward on WASM of
 * the adapter the step before left: to 1e-5 beside WebAssembly, and to 1e-3 beside WebGPU (the
 * tolerance the ONNX suite states between WebGPU and WASM), while the base model's are ten times
 * that far off. A run on WebGPU stopped after its first step and resumed ends bit for bit as the
 * uninterrupted one (one engine against itself).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { comparable, type ComparedBundle } from '../crash/compare.js';

type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string; stack?: string } };
interface RunReport {
  status: string;
  backend: string;
  engine: string;
  stored: string;
  steps: number[];
  updates: number;
  refresh: number[];
  followed: number;
  moved: number;
}

let session: BrowserSession;
let page: Page;

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/lora-run.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(() => session?.close());
expectNoConsoleErrors(() => session);

describe('loraGrpo in Chromium', () => {
  it.each([
    ['wasm', 1e-5],
    ['webgpu', 1e-3],
  ])("policy on %s, trained on onnxruntime's graphs there: samples each step from the adapter the step before left (to %s), checkpoints in IndexedDB", async (device, tolerance) => {
    const result = (await page.evaluate((d) => (window as unknown as { lora: { run(d: string): Promise<unknown> } }).lora.run(d), device)) as Outcome<RunReport>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const r = result.value;
    expect(r).toMatchObject({ status: 'completed', backend: device, engine: 'onnxruntime', stored: 'onnxruntime', steps: [1, 2], updates: 2 });
    // One refresh time a step, measured (a clock of 0.1 ms may read 0 for a WebGPU adapter's writes).
    expect(r.refresh).toHaveLength(2);
    for (const ms of r.refresh) expect(Number.isFinite(ms) && ms >= 0, `refresh ${ms} ms`).toBe(true);
    expect(r.followed, `followed ${r.followed}, moved ${r.moved}`).toBeLessThan(tolerance);
    expect(r.moved, `followed ${r.followed}, moved ${r.moved}`).toBeGreaterThan(10 * tolerance);
  }, 240_000);

  it('on WebGPU: a run stopped after its first step and resumed ends bit for bit as the uninterrupted one', async () => {
    type Report = { engine: string; stopped: { status: string; steps: number }; resumed: { status: string; steps: number }; whole: ComparedBundle; cut: ComparedBundle };
    const result = (await page.evaluate(() => (window as unknown as { lora: { resume(d: string): Promise<unknown> } }).lora.resume('webgpu'))) as Outcome<Report>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const r = result.value;
    expect(r).toMatchObject({ engine: 'onnxruntime', stopped: { status: 'aborted', steps: 1 }, resumed: { status: 'completed', steps: 2 } });
    expect(r.whole.steps).toHaveLength(2);
    expect(comparable(r.cut)).toEqual(comparable(r.whole));
  }, 300_000);
});
