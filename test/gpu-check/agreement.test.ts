/**
 * The GPU check's verdict (scripts/gpu-check): the comparison of WebGPU's numbers against WASM's
 * must flag a difference above the tolerance, a shape mismatch, a non-finite value, and a
 * comparison that could not be made; and the page's fetch must answer with the files it names.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareLogprobs, compareScalar } from '../../scripts/gpu-check/agreement.js';
import type { BackendResult } from '../../scripts/gpu-check/backend.js';
import { pageFetch, unshared } from '../../scripts/gpu-check/page-globals.js';
import { PAGE_ORIGIN } from '../../scripts/gpu-check/page-origin.js';
import { agreementOf, LOGPROB_TOLERANCE, markdown, passed } from '../../scripts/gpu-check/report.js';

const base = [
  [-1.25, -2.5, -0.75],
  [-3.0, -0.125],
];

describe('compareLogprobs', () => {
  it('agrees within the tolerance and names the largest difference', () => {
    const other = [
      [-1.25, -2.50005, -0.75],
      [-3.00002, -0.125],
    ];
    const a = compareLogprobs(base, other, 1e-4);
    expect(a.ok).toBe(true);
    expect(a.at).toEqual([0, 1]);
    expect(a.maxAbs).toBeCloseTo(5e-5, 9);
    expect(a.tokens).toBe(5);
  });

  it('flags one token past the tolerance', () => {
    const other = base.map((row) => [...row]);
    other[1][1] += 2e-4;
    const a = compareLogprobs(base, other, 1e-4);
    expect(a.ok).toBe(false);
    expect(a.at).toEqual([1, 1]);
  });

  it('fails on other shapes and on values that are not finite, whatever the tolerance', () => {
    expect(compareLogprobs(base, [base[0]], 1)).toMatchObject({ ok: false, problem: '2 rows against 1' });
    expect(compareLogprobs(base, [base[0], [-3.0]], 1)).toMatchObject({ ok: false, problem: 'row 1 has 2 tokens against 1' });
    expect(compareLogprobs(base, [base[0], [NaN, -0.125]], 1)).toMatchObject({ ok: false, at: [1, 0] });
  });
});

describe('compareScalar', () => {
  it('holds a loss near 0 absolutely and a norm relatively', () => {
    expect(compareScalar('loss', 1e-9, -2e-9, 1e-4, 'absolute').ok).toBe(true);
    expect(compareScalar('loss', 1e-9, -2e-9, 1e-4, 'relative').ok).toBe(false);
    expect(compareScalar('norm', 2.0, 2.001, 1e-3, 'relative').ok).toBe(true);
    expect(compareScalar('norm', 2.0, 2.01, 1e-3, 'relative').ok).toBe(false);
    expect(compareScalar('norm', 2.0, Infinity, 1e9, 'absolute').ok).toBe(false);
  });
});

function result(backend: 'webgpu' | 'wasm', logprobs: number[][], step?: { loss: number; gradNorm: number }): BackendResult {
  return {
    backend,
    peakRssBytes: 1,
    errors: [],
    sampled: { promptTokenIds: [1], tokenIds: logprobs.map((row) => row.map(() => 5)), logprobs },
    scoring: { on: backend === 'webgpu' ? 'own' : 'given', ms: 10, firstMs: 20, logprobs },
    ...(step ? { lora: { readMs: 1, steps: [{ ms: 30, ...step }, { ms: 20, ...step }] } } : {}),
  };
}

describe('the verdict', () => {
  it('passes when every comparison was made and holds', () => {
    const gpu = result('webgpu', base, { loss: 0.01, gradNorm: 2 });
    const wasm = result('wasm', base, { loss: 0.01, gradNorm: 2 });
    const agreement = agreementOf(gpu, wasm);
    expect(passed(agreement, [gpu, wasm])).toBe(true);
    expect(markdown('t', [], [gpu, wasm], agreement, true)).toContain('Verdict: **pass**');
  });

  it('fails when a backend could not take its LoRA step, though the rest agrees', () => {
    const gpu = result('webgpu', base, { loss: 0.01, gradNorm: 2 });
    const wasm = { ...result('wasm', base), errors: [{ phase: 'lora', message: 'std::bad_alloc' }] };
    const agreement = agreementOf(gpu, wasm);
    expect(agreement.scoring?.ok).toBe(true);
    expect(agreement.stepLoss).toBeUndefined();
    expect(passed(agreement, [gpu, wasm])).toBe(false);
    expect(markdown('t', [], [gpu, wasm], agreement, false)).toContain('wasm lora failed: std::bad_alloc');
  });

  it('fails when the scoring passes differ past 1e-4', () => {
    const shifted = base.map((row) => row.map((v) => v + 2 * LOGPROB_TOLERANCE));
    const gpu = result('webgpu', base, { loss: 0.01, gradNorm: 2 });
    const wasm = result('wasm', shifted, { loss: 0.01, gradNorm: 2 });
    const agreement = agreementOf(gpu, wasm);
    expect(agreement.scoring?.ok).toBe(false);
    expect(passed(agreement, [gpu, wasm])).toBe(false);
  });
});

describe("the page's fetch", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-check-'));
    await writeFile(join(dir, 'config.json'), '{"a":1}');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const page = new URL(`${PAGE_ORIGIN}/`);
  const next: typeof fetch = async () => new Response('elsewhere', { status: 299 });

  it('answers the page origin, paths and file: URLs with the files, HEAD with their size', async () => {
    const get = pageFetch(next, page);
    expect(await (await get(`${PAGE_ORIGIN}${dir}/config.json`)).text()).toBe('{"a":1}');
    expect(await (await get(`${dir}/config.json`)).text()).toBe('{"a":1}');
    expect(await (await get(pathToFileURL(join(dir, 'config.json')))).text()).toBe('{"a":1}');
    const head = await get(`${dir}/config.json`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, '7']);
    expect((await get(`${dir}/missing.json`)).status).toBe(404);
    expect((await get(dir)).status).toBe(404);
    expect((await get('https://example.com/x')).status).toBe(299);
  });
});

describe('unshared', () => {
  it('copies a view of a SharedArrayBuffer into a plain buffer with the same bytes', () => {
    const shared = new Uint8Array(new SharedArrayBuffer(8));
    shared.set([1, 2, 3, 4, 5, 6, 7, 8]);
    const view = shared.subarray(2, 6);
    const copy = unshared(view) as Uint8Array;
    expect(copy.buffer).toBeInstanceOf(ArrayBuffer);
    expect([...copy]).toEqual([3, 4, 5, 6]);
    const plain = new Float32Array(2);
    expect(unshared(plain)).toBe(plain);
  });
});
