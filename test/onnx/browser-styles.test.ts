/**
 * The export styles of export-styles.test.ts in real Chromium, on WebAssembly and on WebGPU
 * (SwiftShader): each loads, reports the same pass and batch modes as in Node, scores what it
 * generates, decodes greedily as Node does, and agrees with Node's scores of the same tokens.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import type { GroupResult, PolicyInfo, ScoreResult } from '../../lib/core/policy.js';
import { buildModel, TINY, type ModelSpec } from '../../scripts/build-model/index.js';
import { expectNoConsoleErrors, launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { greedyAgreement } from '../browser/near-ties.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = 'build/test-fixtures/export-styles';
const BASE: ModelSpec = { ...TINY, seed: 11, numLayers: 2, maxPositionEmbeddings: 1024 };
// SwiftShader's WebGPU has no shader-f16, so the float16 graph runs on WASM only here.
const STYLES: Array<[string, Partial<ModelSpec>, Array<'wasm' | 'webgpu'>]> = [
  ['genai', { graph: 'genai' }, ['wasm', 'webgpu']],
  ['q4', { weights: 'q4' }, ['wasm', 'webgpu']],
  ['half-cache', { halfCache: true }, ['wasm']],
  ['input-ids-mask', { causalMask: 'input-ids', positionIdsInput: false }, ['wasm', 'webgpu']],
];
const options = { prompt: 'The export says', groupSize: 3, maxNewTokens: 8, seed: 2, temperature: 0.8 };

let session: BrowserSession;
let page: Page;
beforeAll(async () => {
  await Promise.all(STYLES.map(([name, style]) => buildModel({ ...BASE, ...style }, join(root, FIXTURES, name))));
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/onnx.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
}, 120_000);
afterAll(async () => {
  await session?.close();
  await rm(join(root, FIXTURES), { recursive: true, force: true });
});
// Loading runs pass probes that fail on some of these graphs by design: they must log nothing.
expectNoConsoleErrors(() => session);

type Outcome = { ok: true; value: { info: PolicyInfo; group: GroupResult; scored: ScoreResult; greedy: GroupResult } } | { ok: false; error: { message: string } };

describe.each(STYLES)('%s', (name, _, devices) => {
  it.each(devices)('runs on %s like in Node', async (device) => {
    const outcome = (await page.evaluate(
      ([d, m, o]) => (window as unknown as { onnx: { exportStyle: (...a: unknown[]) => Promise<unknown> } }).onnx.exportStyle(d, m, o),
      [device, `/${FIXTURES}/${name}`, options] as const,
    )) as Outcome;
    if (!outcome.ok) throw new Error(outcome.error.message);
    const { info, group, scored, greedy } = outcome.value;
    const node = await loadOnnxPolicy({ model: join(root, FIXTURES, name) });
    try {
      expect(info).toMatchObject({ backend: device, passMode: node.info.passMode });
      // WebGPU cannot try runs that may fail and guesses from the inputs: it may batch less than
      // Node, never more.
      if (device === 'wasm' || node.info.batchMode === 'equal-length') expect(info.batchMode).toBe(node.info.batchMode);
      else expect(['padded', 'equal-length']).toContain(info.batchMode);
      const nodeScored = await node.scoreCompletions({ prompt: options.prompt, completions: group.completions.map((c) => c.tokenIds), temperature: options.temperature });
      group.completions.forEach((c, i) =>
        c.logprobs.forEach((lp, t) => {
          expect(Math.abs(lp - scored.logprobs[i][t]), 'scored in the browser').toBeLessThan(1e-3);
          expect(Math.abs(lp - nodeScored.logprobs[i][t]), 'scored in Node').toBeLessThan(1e-2);
        }),
      );
      // Greedy: the same tokens wherever the top two are further apart than the engines' 1e-2.
      const nodeGreedy = await node.generateGroup({ prompt: options.prompt, groupSize: 1, maxNewTokens: options.maxNewTokens, temperature: 0, topLogprobs: 2 });
      const agreement = greedyAgreement(greedy.completions[0], nodeGreedy.completions[0], 1e-2, `${name} on ${device}`);
      expect(agreement.compared + agreement.ties, JSON.stringify(agreement)).toBeGreaterThan(0);
    } finally {
      await node.dispose();
    }
  }, 300_000);
});
