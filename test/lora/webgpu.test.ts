/**
 * The full-depth LoRA engine's WGSL kernels in real headless Chromium on WebGPU (SwiftShader, a
 * CPU implementation of WebGPU: the kernels run for real, slowly). Shapes are drawn at random per
 * seed (test/lora/webgpu-case.ts; six consecutive seeds cover Llama, Qwen2 and Qwen3, tied and untied): the WebGPU log-probs, entropies and every A and B gradient
 * equal the CPU engine's to 1e-4 relative to each tensor's size, and the WebGPU gradient of every
 * A and B (its largest entry) equals central finite differences of the CPU engine's float64 loss
 * to 1e-3. The finite differences run in float64 because in float32 a step small enough to keep
 * the truncation error under 1e-3 leaves the rounding error of the loss (about 1e-7 of it,
 * divided by the step) above it.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';

type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string; stack?: string } };
interface Check {
  summary: string;
  vsCpu: { logprobs: number; entropies: number; gradients: number };
  fd: number;
  tensors: number;
  gradientSize: number;
}

let session: BrowserSession;
let page: Page;

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/lora-webgpu.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(() => session?.close());
expectNoConsoleErrors(() => session);

const SEEDS = (process.env.WEBGRPO_LORA_GPU_SEEDS ?? '101,102,103,104,105,106').split(',').map(Number);

describe('full-depth LoRA on WebGPU (WGSL kernels)', () => {
  it.each(SEEDS)('random shapes, seed %i: equals the CPU engine to 1e-4 and finite differences to 1e-3', async (seed) => {
    const result = (await page.evaluate((s) => (window as unknown as { lora: { check(s: number): Promise<unknown> } }).lora.check(s), seed)) as Outcome<Check>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const r = result.value;
    const label = `${r.summary}: ${JSON.stringify({ ...r.vsCpu, fd: r.fd })}`;
    expect(r.tensors, label).toBeGreaterThan(0);
    expect(r.gradientSize, label).toBeGreaterThan(0);
    expect(r.vsCpu.logprobs, label).toBeLessThan(1e-4);
    expect(r.vsCpu.entropies, label).toBeLessThan(1e-4);
    expect(r.vsCpu.gradients, label).toBeLessThan(1e-4);
    expect(r.fd, label).toBeLessThan(1e-3);
  }, 120_000);

  it('LoraGrpoTrainer takes the same two updates on WebGPU as on the CPU, to 1e-4 (the bundled model)', async () => {
    type Side = { engine: string; first: Record<string, number>; second: Record<string, number>; weights: number[] };
    const result = (await page.evaluate(() => (window as unknown as { lora: { trainer(): Promise<unknown> } }).lora.trainer())) as Outcome<{ cpu: Side; webgpu: Side }>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const { cpu, webgpu } = result.value;
    expect(cpu.engine).toBe('cpu');
    expect(webgpu.engine).toBe('webgpu');
    for (const step of ['first', 'second'] as const) {
      for (const key of ['loss', 'kl', 'entropy', 'advantageStd']) expect(Math.abs(webgpu[step][key] - cpu[step][key]), `${step} ${key}`).toBeLessThan(1e-4);
      expect(Math.abs(webgpu[step].gradNorm - cpu[step].gradNorm) / cpu[step].gradNorm, `${step} gradNorm`).toBeLessThan(1e-4);
    }
    // The second step's numbers (KL above zero) agree too, so the first update moved both adapters
    // alike. The weights are not compared element by element: Adam divides each gradient by its own
    // running size, so entries whose gradient is float32 noise take different steps of up to lr.
    expect(cpu.second.kl, JSON.stringify({ cpu: cpu.second, webgpu: webgpu.second })).toBeGreaterThan(1e-6);
    expect(webgpu.weights).toHaveLength(cpu.weights.length);
  }, 240_000);

  it('refuses a second backward, wrong gradient rows and a disposed model with typed errors', async () => {
    type Caught = { name: string; code: string; message: string } | null;
    const result = (await page.evaluate(() => (window as unknown as { lora: { errors(): Promise<unknown> } }).lora.errors())) as Outcome<Record<string, Caught>>;
    if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
    const { twice, shortRows, disposed } = result.value;
    expect(twice).toMatchObject({ code: 'InvalidInput' });
    expect(twice?.message).toMatch(/already taken/);
    expect(shortRows).toMatchObject({ code: 'InvalidInput' });
    expect(shortRows?.message).toMatch(/dlogps/);
    expect(disposed).toMatchObject({ code: 'InvalidInput' });
  });
});
