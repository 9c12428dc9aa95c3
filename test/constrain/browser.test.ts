/**
 * Constrained decoding in real headless Chromium, on WebGPU (SwiftShader) and WebAssembly, with
 * the bundled model:
 *  - the WebGPU sampling kernel with token masks draws what lib/policy/sampling.ts draws with the
 *    same masks, for each filter, in float32 and float16, and uploads one bit per token per row;
 *  - random schemas on fixed seeds: every completion parses and validates (ajv), on both engines,
 *    and on WebGPU with a byte-level BPE model (byte-level-model.ts);
 *  - `sampledLogprobs` under a constraint are the log-probs of the masked distribution recomputed
 *    from the same engine's scores, to 1e-4 (the GPU kernel against the host's float64 math), and
 *    `logprobs` the unconstrained ones, also against Node (CPU) to 1e-3, the tolerance of one
 *    forward pass across engines (test/onnx/browser.test.ts).
 */
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResponseFormat } from '../../lib/index.js';
import { compileResponseFormat, tokenVocabulary } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { isAllowed } from '../../lib/constrain/mask.js';
import { tokenBytesTable } from '../../lib/policy/onnx/token-table.js';
import type { SampledToken, SamplingConfig } from '../../lib/policy/sampling.js';
import type { GenerateGroupOptions, GroupResult, PolicyInfo, ScoreOptions, ScoreResult } from '../../lib/core/policy.js';
import { drawAgreement } from '../browser/near-ties.js';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { BYTE_LEVEL_MODEL_DIR, BYTE_LEVEL_MODEL_URL, buildByteLevelModel } from './byte-level-model.js';
import { schemaArbitrary } from './schemas.js';

type Device = 'wasm' | 'webgpu';
type Outcome<T> = { ok: true; value: T } | { ok: false; error: { name: string; message: string } };
type KernelReport =
  | { dtype: string; config: SamplingConfig; gpu: SampledToken[]; cpu: SampledToken[]; allowed: boolean[]; nearby: number[][] }
  | { dtype: string; maskBytes: number; calls: number; rows: number; words: number };
interface ConstrainPage {
  load(device: Device, model?: string, name?: string): Promise<Outcome<PolicyInfo>>;
  /** `device`: a device, or the name a model was loaded under. */
  generate(device: string, options: GenerateGroupOptions): Promise<Outcome<GroupResult>>;
  score(device: Device, options: ScoreOptions): Promise<Outcome<ScoreResult>>;
  stats(device: Device): { maskBytes: number };
  maskedKernels(configs: SamplingConfig[]): Promise<Outcome<KernelReport[]>>;
}

const DEVICES: Device[] = ['webgpu', 'wasm'];
const ajv = new Ajv({ strict: false });
let session: BrowserSession;
let page: Page;
let cpu: OnnxPolicy;
let bytes: Uint8Array[];

async function call<K extends keyof ConstrainPage>(name: K, ...args: Parameters<ConstrainPage[K]>): Promise<Awaited<ReturnType<ConstrainPage[K]>> extends Outcome<infer T> ? T : Awaited<ReturnType<ConstrainPage[K]>>> {
  const result = await page.evaluate(([n, a]) => (window as unknown as { constrain: Record<string, (...x: unknown[]) => unknown> }).constrain[n](...a), [name, args] as const);
  if (result && typeof result === 'object' && 'ok' in result) {
    const outcome = result as Outcome<unknown>;
    if (!outcome.ok) throw new Error(`${name} failed in the page: ${outcome.error.name}: ${outcome.error.message}`);
    return outcome.value as never;
  }
  return result as never;
}

beforeAll(async () => {
  const path = await bundledModelPath();
  cpu = await loadOnnxPolicy({ model: path, device: 'cpu' });
  bytes = tokenBytesTable(JSON.parse(await readFile(join(path, 'tokenizer.json'), 'utf8')), 102);
  await buildByteLevelModel(BYTE_LEVEL_MODEL_DIR);
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/constrain.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, { timeout: 60_000 });
  for (const device of DEVICES) expect(await call('load', device)).toMatchObject({ backend: device, responseFormats: true });
  expect(await call('load', 'webgpu', BYTE_LEVEL_MODEL_URL, 'bytes')).toMatchObject({ backend: 'webgpu', responseFormats: true });
}, 180_000);
afterAll(async () => {
  await session?.close();
  await cpu?.dispose();
});

describe('the WebGPU sampling kernel with token masks', () => {
  it('draws what lib/policy/sampling.ts draws under the same masks, and uploads one bit per token per row', async () => {
    const base = { temperature: 1, topK: 0, topP: 1, minP: 0 };
    const configs: SamplingConfig[] = [
      base,
      { ...base, temperature: 0.6 },
      { ...base, temperature: 0 },
      { ...base, topK: 1 },
      { ...base, topK: 7 },
      { ...base, topK: 600 }, // more than some rows allow
      { ...base, topP: 0.2 },
      { ...base, topP: 0.9 },
      { ...base, minP: 0.2 },
      { temperature: 0.8, topK: 50, topP: 0.7, minP: 0.05 },
    ];
    const report = await call('maskedKernels', configs);
    expect(report).toHaveLength(2 * (configs.length + 1));
    const total = { compared: 0, ties: 0 };
    for (const entry of report) {
      if ('maskBytes' in entry) {
        // Every pick of every call as a bitset (ceil(1000 / 32) words): never a float per token.
        expect(entry.maskBytes).toBe(entry.calls * entry.rows * entry.words * 4);
        continue;
      }
      const { dtype, config, gpu, cpu: host, allowed, nearby } = entry;
      const label = `${dtype} ${JSON.stringify(config)}`;
      expect(allowed.every(Boolean), label).toBe(true);
      // The same draw wherever it does not hinge on rounding; at a near tie, one the reference makes nearby.
      const agreement = drawAgreement(gpu, host, nearby, 1e-4, label);
      total.compared += agreement.compared;
      total.ties += agreement.ties;
    }
    // Greedy on logits full of exact ties is always a near tie; most sampled draws are not.
    expect(total.compared, `${total.compared} draws compared, ${total.ties} near ties`).toBeGreaterThan(total.ties);
  }, 120_000);
});

describe('responseFormat in Chromium', () => {
  it('every completion of a random schema parses and validates, on WebGPU and WebAssembly', async () => {
    const schemas = fc.sample(schemaArbitrary(false), { seed: 1919, numRuns: 5 });
    for (const [i, schema] of schemas.entries()) {
      const validate = ajv.compile(schema);
      for (const device of DEVICES) {
        const group = await call('generate', device, { prompt: 'JSON:', groupSize: 2, maxNewTokens: 100, seed: 40 + i, responseFormat: { type: 'json_schema', schema } });
        for (const c of group.completions) {
          const value: unknown = JSON.parse(c.text);
          if (!validate(value)) throw new Error(`${device}: ${c.text} does not validate against ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
        }
      }
    }
  }, 300_000);

  it('every completion of a random schema, non-ASCII text included, parses and validates on WebGPU with a byte-level BPE tokenizer', async () => {
    const schemas = fc.sample(schemaArbitrary(true), { seed: 1920, numRuns: 5 });
    for (const [i, schema] of schemas.entries()) {
      const validate = ajv.compile(schema);
      const group = await call('generate', 'bytes', { prompt: 'JSON:', groupSize: 2, maxNewTokens: 120, seed: 60 + i, responseFormat: { type: 'json_schema', schema } });
      for (const c of group.completions) {
        const value: unknown = JSON.parse(c.text);
        if (!validate(value)) throw new Error(`${c.text} does not validate against ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
      }
    }
  }, 300_000);

  it('sampledLogprobs are the masked distribution recomputed from scores to 1e-4, logprobs the unconstrained ones; the mask goes up as bits', async () => {
    const format: ResponseFormat = { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'boolean' }, b: { enum: ['x', 'yy'] } }, required: ['a', 'b'] } };
    const temperature = 0.8;
    // Two rows on WebAssembly, one on WebGPU (SwiftShader scores the continuations slowly).
    const options = (device: Device) => ({ prompt: 'P', groupSize: device === 'wasm' ? 2 : 1, maxNewTokens: 60, seed: 5, temperature, responseFormat: format });
    const grammar = compileResponseFormat(format);
    const vocabulary = tokenVocabulary(bytes, [2, 5]);
    for (const device of DEVICES) {
      const before = (await call('stats', device)).maskBytes;
      const group = await call('generate', device, options(device));
      const uploaded = (await call('stats', device)).maskBytes - before;
      const steps = group.completions.reduce((n, c) => n + c.tokenIds.length, 0);
      // WebGPU: 4 words (102 tokens) per constrained row per step; WASM keeps the mask in host memory.
      expect(uploaded).toBe(device === 'webgpu' ? 16 * steps : 0);
      const completions = group.completions.map((c) => c.tokenIds);
      const [scored, node] = [await call('score', device, { prompt: 'P', completions, temperature }), await cpu.scoreCompletions({ prompt: 'P', completions, temperature })];
      for (const [i, c] of group.completions.entries()) {
        expect(c.finishReason).toBe('eos'); // the longest answer fits, so the budget never narrows the mask
        expect(JSON.parse(c.text)).toMatchObject({ b: expect.any(String) });
        c.logprobs.forEach((lp, t) => {
          expect(Math.abs(lp - scored.logprobs[i][t]), `${device} logprob ${t}`).toBeLessThan(1e-4);
          expect(Math.abs(lp - node.logprobs[i][t]), `${device} logprob ${t} against Node`).toBeLessThan(1e-3);
        });
        // log p_masked(token) = logprob - log(sum of p over the allowed tokens), each allowed
        // token's p scored as a one-token continuation of the prefix (all steps in one call).
        const matcher = grammar.matcher(vocabulary);
        const continuations: Array<{ step: number; ids: number[] }> = [];
        for (const [t, id] of c.tokenIds.entries()) {
          for (let k = 0; k < 102; k++) if (isAllowed(matcher.allowed(), k)) continuations.push({ step: t, ids: [...c.tokenIds.slice(0, t), k] });
          matcher.accept(id);
        }
        const next = await call('score', device, { prompt: 'P', completions: continuations.map((x) => x.ids), temperature });
        const mass = new Float64Array(c.tokenIds.length);
        continuations.forEach(({ step }, j) => (mass[step] += Math.exp(next.logprobs[j][step])));
        c.tokenIds.forEach((_, t) => expect(Math.abs(c.sampledLogprobs![t] - (scored.logprobs[i][t] - Math.log(mass[t]))), `${device} sampled ${t}`).toBeLessThan(1e-4));
      }
    }
  }, 300_000);
});
