/**
 * The WebGPU LoRA engine over 16-bit and 4-bit base weights, and with activation recomputation,
 * in real headless Chromium (SwiftShader). Random wide shapes (test/lora/webgpu-case.ts, several
 * 4-bit blocks per column): the engine reading fp16, bf16 and MatMulNBits weights in its kernels
 * equals the CPU engine on the same stored weights (log-probs, entropies, every A and B gradient,
 * 1e-4 relative to each tensor's size, as test/lora/webgpu.test.ts), while the device holds
 * exactly the packed bytes (counted here from the formats, independently of the engine);
 * recomputing each layer in the backward gives the same numbers to 1e-6 from fewer buffer bytes.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecoderShape } from '../../lib/lora/weights.js';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';

type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string; stack?: string } };
type Format = 'f16' | 'bf16' | 'q4' | 'q4-symmetric';
interface Stats {
  bytes: number;
  matrixBytes: Record<'f32' | 'f16' | 'bf16' | 'q4', number>;
  otherBytes: number;
}
interface Packed {
  summary: string;
  shape: DecoderShape;
  tied: boolean;
  vsCpu: { logprobs: number; entropies: number; gradients: number };
  fromFp32: number;
  stats: Stats;
  fp32Stats: Stats;
}
interface Recomputed {
  summary: string;
  layers: number;
  diff: { logprobs: number; entropies: number; gradients: number };
  gradientSize: number;
  keptPeak: number;
  recomputedPeak: number;
  liveAfter: [number, number];
}

let session: BrowserSession;
let page: Page;

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/lora-webgpu-packed.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(() => session?.close());
expectNoConsoleErrors(() => session);

async function call<T>(name: string, ...args: unknown[]): Promise<T> {
  const result = (await page.evaluate(
    ([n, a]) => (window as unknown as { lora: Record<string, (...x: unknown[]) => Promise<unknown>> }).lora[n as string](...(a as unknown[])),
    [name, args] as const,
  )) as Outcome<T>;
  if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}\n${result.error.stack ?? ''}`);
  return result.value;
}

/** GPU buffers come in 16-byte granules of at least 16 bytes. */
const alloc = (bytes: number) => Math.max(16, Math.ceil(bytes / 16) * 16);
const BLOCK = 16;

/** [rows, cols] of every projection of every layer. */
function projections(s: DecoderShape): Array<[number, number]> {
  const q = s.numHeads * s.headDim;
  const kv = s.numKvHeads * s.headDim;
  const one: Array<[number, number]> = [
    [s.hiddenSize, q],
    [s.hiddenSize, kv],
    [s.hiddenSize, kv],
    [q, s.hiddenSize],
    [s.hiddenSize, s.intermediateSize],
    [s.hiddenSize, s.intermediateSize],
    [s.intermediateSize, s.hiddenSize],
  ];
  return Array.from({ length: s.numLayers }, () => one).flat();
}

const f32Bytes = ([r, c]: [number, number]) => alloc(r * c * 4);
const halfBytes = ([r, c]: [number, number]) => alloc(Math.ceil((r * c) / 2) * 4);
function q4Bytes([K, N]: [number, number], zeros: boolean): number {
  const blocks = Math.ceil(K / BLOCK);
  return alloc(Math.ceil((N * blocks * BLOCK) / 2 / 4) * 4) + alloc(N * blocks * 4) + (zeros ? alloc(Math.ceil((N * Math.ceil(blocks / 2)) / 4) * 4) : 0);
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('WebGPU LoRA over 16-bit and 4-bit base weights', () => {
  const cases: Array<[Format, number]> = [
    ['f16', 201],
    ['f16', 204],
    ['bf16', 202],
    ['q4', 203],
    ['q4', 206],
    ['q4-symmetric', 205],
  ];
  it.each(cases)('%s, seed %i: equals the CPU engine on the same stored weights, holding only the packed bytes', async (format, seed) => {
    const r = await call<Packed>('packed', seed, format);
    const label = `${r.summary}: ${JSON.stringify(r.vsCpu)}`;
    expect(r.vsCpu.logprobs, label).toBeLessThan(1e-4);
    expect(r.vsCpu.entropies, label).toBeLessThan(1e-4);
    expect(r.vsCpu.gradients, label).toBeLessThan(1e-4);
    const heads: Array<[number, number]> = [[r.shape.vocabSize, r.shape.hiddenSize], ...(r.tied ? [] : [[r.shape.hiddenSize, r.shape.vocabSize] as [number, number]])];
    const matrices = [...projections(r.shape), ...heads];
    expect(r.fp32Stats.matrixBytes, label).toEqual({ f32: sum(matrices.map(f32Bytes)), f16: 0, bf16: 0, q4: 0 });
    expect(r.stats.otherBytes).toBe(r.fp32Stats.otherBytes);
    if (format === 'f16' || format === 'bf16') {
      expect(r.stats.matrixBytes, label).toEqual({ f32: 0, f16: 0, bf16: 0, q4: 0, [format]: sum(matrices.map(halfBytes)) });
      expect(r.stats.matrixBytes[format] / r.fp32Stats.matrixBytes.f32, label).toBeLessThan(0.51);
      // Rounding to 16 bits moved the log-probs: the comparison above ran the 16-bit model.
      expect(r.fromFp32, label).toBeGreaterThan(1e-6);
    } else {
      const zeros = format === 'q4';
      const q4 = sum(projections(r.shape).map((m) => q4Bytes(m, zeros)));
      expect(r.stats.matrixBytes, label).toEqual({ f32: sum(heads.map(f32Bytes)), f16: 0, bf16: 0, q4 });
      // Block 16 with float32 scales: 0.5 + 0.25 (+ 1/32) bytes a weight, against 4 (K padded to whole blocks).
      const padded = sum(projections(r.shape).map(([K, N]) => f32Bytes([Math.ceil(K / BLOCK) * BLOCK, N])));
      expect(q4 / padded, label).toBeLessThan(0.2);
      expect(r.fromFp32, label).toBeGreaterThan(1e-4);
    }
    expect(r.stats.bytes).toBe(r.stats.otherBytes + sum(Object.values(r.stats.matrixBytes)));
  }, 180_000);

  it('uploads a matrix marked 16-bit whose values no longer fit as float32, and refuses a 4-bit matrix of the wrong size', async () => {
    type Edges = { stale: { stats: Stats; logprobs: number }; short: { code: string; message: string } | null };
    const { stale, short } = await call<Edges>('edges');
    expect(stale.stats.matrixBytes.f32).toBeGreaterThan(0);
    expect(stale.stats.matrixBytes.f16).toBeGreaterThan(0);
    expect(stale.logprobs).toBeLessThan(1e-4);
    expect(short).toMatchObject({ code: 'InvalidInput' });
    expect(short?.message).toMatch(/layer 0 k_proj has \d+ packed 4-bit bytes/);
  }, 180_000);
});

describe('WebGPU LoRA with activation recomputation', () => {
  it.each([
    ['f32', 302],
    ['q4', 306],
  ] as const)('%s, seed %i: the same log-probs and gradients to 1e-6 from fewer buffer bytes', async (format, seed) => {
    const r = await call<Recomputed>('recompute', seed, format === 'f32' ? 'f32' : format);
    const label = `${r.summary}: ${JSON.stringify({ ...r.diff, keptPeak: r.keptPeak, recomputedPeak: r.recomputedPeak })}`;
    expect(r.layers, label).toBeGreaterThan(1);
    expect(r.gradientSize, label).toBeGreaterThan(0);
    expect(r.diff.logprobs, label).toBeLessThanOrEqual(1e-6);
    expect(r.diff.entropies, label).toBeLessThanOrEqual(1e-6);
    expect(r.diff.gradients, label).toBeLessThanOrEqual(1e-6);
    expect(r.recomputedPeak, label).toBeLessThan(r.keptPeak);
    // Every buffer of both passes was freed by its backward.
    expect(r.liveAfter).toEqual([0, 0]);
  }, 180_000);
});
