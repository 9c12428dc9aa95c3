/**
 * The hub layouts of hub-layouts.test.ts in real Chromium on WebAssembly: the page reads
 * `model.onnx_data` (or an inline graph's own file) tensor by tensor from a streamed response (the browser's ModelHost), samples
 * with the scoring pass's log-probs, trains one LoRA step and exports PEFT's names and shapes; an
 * fp16 folder (its projections kept at 16 bits in the training graphs) and a q4f16 folder
 * (MatMulNBits with float16 scales, float16 activations) run there too. SwiftShader's
 * WebGPU has no shader-f16, so the float16 graphs are not tried on WebGPU here.
 */
import { statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel, type ModelSpec } from '../../scripts/build-model/index.js';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { SMALL } from '../train/exports.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = 'build/test-fixtures/hub-layouts';
const LAYOUTS: Array<[string, Partial<ModelSpec>]> = [
  ['fp32-external', { externalData: true, qkvBias: true }],
  // fp16 projections enter the training graphs as float16 inputs, widened in each run.
  ['fp16-external', { weights: 'fp16', externalData: true }],
  ['q4f16-external', { weights: 'q4f16', externalData: true, qkvBias: true, qkNorm: true }],
  // Weights inline, as in a hub export under 2 GB: the graph is read as it streams in, and each
  // weight of 64 KiB or more (the MLP's, at this width) then into a piece of its own.
  ['fp32-inline', { hiddenSize: 128, numHeads: 8, intermediateSize: 512, qkvBias: true }],
];

let session: BrowserSession;
let page: Page;
beforeAll(async () => {
  await Promise.all(LAYOUTS.map(([name, layout]) => buildModel({ ...SMALL, names: 'exporter', ...layout }, join(root, FIXTURES, name))));
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/hub-layouts.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(async () => {
  await session?.close();
  await rm(join(root, FIXTURES), { recursive: true, force: true });
});
expectNoConsoleErrors(() => session);

interface Report {
  backend: string;
  scoreGap: number;
  pieces: string[];
  /** The sessions made while the model loaded: graph bytes, and weights as external data. */
  loaded: Array<{ bytes: number; external: number }>;
  loss: number;
  moved: number;
  shapes: Record<string, number[]>;
}
type Outcome = { ok: true; value: Report } | { ok: false; error: { name: string; message: string; stack?: string } };

describe('hub layouts in Chromium on WebAssembly', () => {
  it.each(LAYOUTS)('%s loads, samples, trains and exports', async (name, layout) => {
    const outcome = (await page.evaluate(
      ([m, d]) => (window as unknown as { hub: { layout: (...a: unknown[]) => Promise<unknown> } }).hub.layout('wasm', m, d),
      [`/${FIXTURES}/${name}`, layout.weights ?? 'fp32'] as const,
    )) as Outcome;
    if (!outcome.ok) throw new Error(`${outcome.error.name}: ${outcome.error.message}\n${outcome.error.stack ?? ''}`);
    const r = outcome.value;
    expect(r.backend).toBe('wasm');
    expect(r.scoreGap).toBeLessThan(1e-4);
    const file = `${layout.weights && layout.weights !== 'fp32' ? `model_${layout.weights}` : 'model'}.onnx${layout.externalData ? '_data' : ''}`;
    expect(r.pieces.length).toBeGreaterThan(layout.externalData ? 10 : 5);
    expect(r.pieces.every((p) => p.startsWith(`${file}@`))).toBe(true);
    // The decoder's session is made from its weights as external data, inline weights too
    // (session-from-views.ts): onnxruntime-web's heap never holds the whole file.
    expect(r.loaded[0].external).toBeGreaterThanOrEqual(layout.externalData ? 1 : r.pieces.length);
    if (!layout.externalData) expect(r.loaded[0].bytes).toBeLessThan(statSync(join(root, FIXTURES, name, 'onnx', file)).size / 4);
    expect(Number.isFinite(r.loss)).toBe(true);
    expect(r.moved).toBeGreaterThan(0);
    expect(Object.keys(r.shapes)).toHaveLength(SMALL.numLayers * 7 * 2);
    const hidden = layout.hiddenSize ?? SMALL.hiddenSize;
    expect(r.shapes['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight']).toEqual([4, hidden]);
    expect(r.shapes['base_model.model.model.layers.1.mlp.down_proj.lora_B.weight']).toEqual([hidden, 4]);
  }, 120_000);
});
