/**
 * The `lora` method in real headless Chromium: onnxruntime-web samples on WebAssembly and on
 * WebGPU (SwiftShader, a CPU implementation of WebGPU: correct, not fast), the adapter trains on
 * the page's CPU, each step's merged weights are swapped into the policy's session, and every
 * step's checkpoint lands in the real IndexedDB. The next step's sampled log-probs equal the
 * JavaScript forward of the adapter the step before left: to 1e-4 on WebAssembly, and to 1e-3 on
 * WebGPU (the tolerance the ONNX suite states between WebGPU and the CPU), while the base model's
 * are ten times that far off.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';

type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string; stack?: string } };
interface RunReport {
  status: string;
  backend: string;
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

describe('loraGrpo in Chromium', () => {
  it.each([
    ['wasm', 1e-4],
    ['webgpu', 1e-3],
  ])('on %s: samples each step from the adapter the step before left (to %s), checkpoints in IndexedDB', async (device, tolerance) => {
    const result = (await page.evaluate((d) => (window as unknown as { lora: { run(d: string): Promise<unknown> } }).lora.run(d), device)) as Outcome<RunReport>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const r = result.value;
    expect(r).toMatchObject({ status: 'completed', backend: device, steps: [1, 2], updates: 2 });
    for (const ms of r.refresh) expect(ms).toBeGreaterThan(0);
    expect(r.followed, `followed ${r.followed}, moved ${r.moved}`).toBeLessThan(tolerance);
    expect(r.moved, `followed ${r.followed}, moved ${r.moved}`).toBeGreaterThan(10 * tolerance);
  }, 240_000);
});
