/**
 * The LoRA training graphs run by onnxruntime-node on small random decoders (grouped-query and
 * multi-query attention, tied and untied heads, q/k/v biases, q/k norms): central finite differences of the float64 graphs along random directions through every
 * A and B, for a loss that is a random linear function of the log-probs and the entropies; and the
 * float32 graphs (what training runs) against those float64 ones, log-probs, entropies and every
 * A and B gradient.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, OutOfMemoryError } from '../../lib/errors.js';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { mulberry32 } from '../../lib/math/random.js';
import { LoraGraphs, type GraphGroup } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { randomDecoder, type Variant } from '../lora/random-decoder.js';

const runtime = ort as unknown as GraphRuntime;
/** Central differences err by O(step^2): 1e-3 gives 1e-4 relative, 1e-5 gives below 1e-8. */
const STEP = 1e-5;
const base = { vocabSize: 23, hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 1000, rmsNormEps: 1e-6 };

const VARIANTS: Array<[string, Variant]> = [
  ['Llama, GQA (2 kv heads for 4), tied head', { shape: base, tied: true, seed: 1 }],
  ['multi-query (1 kv head for 4), untied head', { shape: { ...base, numKvHeads: 1, vocabSize: 17 }, tied: false, seed: 2 }],
  ['Qwen2: q/k/v biases, untied head', { shape: { ...base, numHeads: 2, numKvHeads: 2, headDim: 6 }, tied: false, qkvBias: true, seed: 3 }],
  ['Qwen3: q/k norms, GQA, tied head, 3 layers', { shape: { ...base, numLayers: 3, headDim: 6 }, tied: true, qkNorm: true, seed: 4 }],
];

function setup(variant: Variant) {
  const weights = randomDecoder(variant);
  const adapter = createLoraAdapter(weights.shape, { r: 3, alpha: 6, seed: variant.seed });
  // B away from zero, so dA is not zero and A's path through B is checked too.
  const rng = mulberry32(variant.seed + 100);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.5;
  const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * weights.shape.vocabSize));
  // Two groups of different lengths: padding, a shared prompt, a one-token completion.
  const groups: GraphGroup[] = [
    { promptIds: draw(3), completions: [draw(4), draw(1), draw(3)] },
    { promptIds: draw(5), completions: [draw(2)] },
  ];
  const completions = groups.flatMap((g) => g.completions);
  const cLogp = completions.map((c) => c.map(() => 2 * rng() - 1));
  const cEntropy = completions.map((c) => c.map(() => 2 * rng() - 1));
  return { weights, adapter, groups, cLogp, cEntropy, rng };
}

const config = (adapter: LoraAdapter) => ({ r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules });
const dot = (rows: number[][], c: number[][]) => rows.reduce((s, row, i) => s + row.reduce((t, v, k) => t + c[i][k] * v, 0), 0);
const tensors = (a: LoraAdapter) => a.layers.flatMap((layer) => Object.values(layer).flatMap((p) => [p.A, p.B]));

describe.each(VARIANTS)('%s', (_, variant) => {
  it('float64 graphs match central finite differences along random directions through every A and B', async () => {
    const { weights, adapter, groups, cLogp, cEntropy, rng } = setup(variant);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    const temperature = 0.8;
    const loss = async () => {
      const pass = await engine.forward(adapter, groups, temperature);
      return dot(pass.logprobs, cLogp) + dot(pass.entropies, cEntropy);
    };
    const pass = await engine.forward(adapter, groups, temperature);
    const grad = await pass.backward(cLogp, cEntropy);
    const params = tensors(adapter);
    const grads = tensors(grad);
    expect(grads.every((g) => g.some((v) => v !== 0))).toBe(true);
    for (let trial = 0; trial < 3; trial++) {
      const saved = params.map((p) => Float32Array.from(p));
      const direction = params.map((p) => Float64Array.from(p, () => 2 * rng() - 1));
      const at = (sign: number) => params.forEach((p, j) => { for (let i = 0; i < p.length; i++) p[i] = saved[j][i] + sign * STEP * direction[j][i]; });
      at(1);
      const up = params.map((p) => Float64Array.from(p));
      const plus = await loss();
      at(-1);
      const minus = await loss();
      // Parameters are float32: the step taken is what the stored values differ by.
      let analytic = 0;
      params.forEach((p, j) => p.forEach((v, i) => (analytic += grads[j][i] * (up[j][i] - v))));
      params.forEach((p, j) => p.set(saved[j]));
      const numeric = plus - minus;
      expect(Math.abs(numeric - analytic) / Math.abs(numeric), `numeric ${numeric} analytic ${analytic}`).toBeLessThan(1e-6);
    }
    await engine.release();
  });

  it('float32 graphs give the float64 ones\' log-probs, entropies (1e-5) and A/B gradients (1e-4 of the largest)', async () => {
    const { weights, adapter, groups, cLogp, cEntropy } = setup(variant);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter));
    const double = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    const pass = await engine.forward(adapter, groups, 0.7);
    const grad = await pass.backward(cLogp, cEntropy);
    const exact = await double.forward(adapter, groups, 0.7);
    const reference = await exact.backward(cLogp, cEntropy);
    const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((r, i) => r.map((v, k) => Math.abs(v - b[i][k]))));
    expect(maxDiff(pass.logprobs, exact.logprobs)).toBeLessThan(1e-5);
    expect(maxDiff(pass.entropies, exact.entropies)).toBeLessThan(1e-5);
    const got = tensors(grad);
    const want = tensors(reference);
    want.forEach((w, j) => {
      const scale = Math.max(...Array.from(w, Math.abs));
      const error = Math.max(...Array.from(w, (v, i) => Math.abs(v - got[j][i])));
      expect(error / scale, `tensor ${j}`).toBeLessThan(1e-4);
    });
    await engine.release();
    await double.release();
  });
});

describe('memory-bounded runs', () => {
  it.each(VARIANTS)('%s: recomputed activations, micro-batches of one row, head chunks of one row and a row per completion give the whole batch\'s log-probs (float64, 1e-12) and gradients (float32 sums, 1e-6)', async (_, variant) => {
    const { weights, adapter, groups, cLogp, cEntropy } = setup(variant);
    const whole = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    // Recomputing each layer's activations in the backward (no budget to keep them) against keeping them.
    const bounded = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64', microBatchTokens: 1, headRows: 1, activationBudget: 0 });
    const reference = await whole.forward(adapter, groups, 0.9);
    const referenceGrad = tensors(await reference.backward(cLogp, cEntropy));
    // The same completions with the prompt copied for each: the layout the engine picks for long completions.
    const split = groups.flatMap((g) => g.completions.map((c) => ({ promptIds: g.promptIds, completions: [c] })));
    for (const [engine, input] of [[bounded, groups], [whole, split], [bounded, split]] as const) {
      const pass = await engine.forward(adapter, input, 0.9);
      const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((r, i) => r.map((v, k) => Math.abs(v - b[i][k]))));
      expect(maxDiff(pass.logprobs, reference.logprobs)).toBeLessThan(1e-12);
      expect(maxDiff(pass.entropies, reference.entropies)).toBeLessThan(1e-12);
      const grad = tensors(await pass.backward(cLogp, cEntropy));
      // Gradients are summed over micro-batches into the adapter's float32 arrays: equal to float32 rounding.
      referenceGrad.forEach((want, j) => {
        const scale = Math.max(...Array.from(want, Math.abs));
        want.forEach((v, i) => expect(Math.abs(grad[j][i] - v)).toBeLessThan(1e-6 * scale));
      });
    }
    await whole.release();
    await bounded.release();
  });

  it('runs a pass for its log-probs alone (a reference pass): the same log-probs, and no backward', async () => {
    const { weights, adapter, groups, cLogp } = setup(VARIANTS[3][1]);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    const full = await engine.forward(adapter, groups, 0.8);
    const only = await engine.forward(adapter, groups, 0.8, { backward: false });
    expect(only.logprobs).toEqual(full.logprobs);
    expect(only.entropies).toEqual(full.entropies);
    await expect(only.backward(cLogp)).rejects.toThrow(/log-probs only/);
    await engine.release();
  });

  it('refuses a micro-batch or head chunk size that is not a positive integer, and a negative activation budget', async () => {
    const { weights, adapter } = setup(VARIANTS[0][1]);
    await expect(LoraGraphs.create(runtime, weights, config(adapter), { microBatchTokens: 0 })).rejects.toThrow(/microBatchTokens/);
    await expect(LoraGraphs.create(runtime, weights, config(adapter), { headRows: 1.5 })).rejects.toThrow(/headRows/);
    await expect(LoraGraphs.create(runtime, weights, config(adapter), { activationBudget: -1 })).rejects.toThrow(/activationBudget/);
  });
});

describe('part by part (forwardBackward)', () => {
  const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((r, i) => r.map((v, k) => Math.abs(v - b[i][k]))));
  const flat = (rows: number[][]) => Float64Array.from(rows.flat());
  /** The sensitivities of a loss linear in the log-probs and entropies, slot by slot, as forwardBackward asks them. */
  const linear = (cLogp: number[][], cEntropy: number[][]) => {
    const dLogp = flat(cLogp);
    const dEntropy = flat(cEntropy);
    const asked: Array<[number, number]> = [];
    const sensitivities = (_: unknown, start: number, end: number) => {
      asked.push([start, end]);
      return { dLogp: dLogp.slice(start, end), dEntropy: dEntropy.slice(start, end) };
    };
    return { sensitivities, asked };
  };
  const expectGradient = (got: LoraAdapter, want: LoraAdapter, tolerance: number) => {
    const g = tensors(got);
    tensors(want).forEach((w, j) => {
      const scale = Math.max(...Array.from(w, Math.abs));
      expect(scale, `tensor ${j}`).toBeGreaterThan(0);
      const error = Math.max(...Array.from(w, (v, i) => Math.abs(v - g[j][i])));
      expect(error / scale, `tensor ${j}`).toBeLessThan(tolerance);
    });
  };

  it.each(VARIANTS)('%s: the log-probs and gradient of a forward then a backward, with and without an entropy term (log-probs to 1e-12 in float64, 1e-5 in float32; gradients, summed in float32, to 1e-6 and 1e-4)', async (_, variant) => {
    const { weights, adapter, groups, cLogp, cEntropy } = setup(variant);
    const noEntropy = cEntropy.map((row) => row.map(() => 0));
    for (const [precision, logpTolerance, gradTolerance] of [['float64', 1e-12, 1e-6], ['float32', 1e-5, 1e-4]] as const) {
      const engine = await LoraGraphs.create(runtime, weights, config(adapter), { precision, microBatchTokens: 8 });
      for (const [dEntropy, entropyGradient] of [[cEntropy, true], [noEntropy, false]] as const) {
        const pass = await engine.forward(adapter, groups, 0.8);
        const want = await pass.backward(cLogp, dEntropy);
        const { sensitivities, asked } = linear(cLogp, dEntropy);
        // Without an entropy term the head takes d log p / d hidden in its forward and runs no backward.
        const step = await engine.forwardBackward(adapter, groups, 0.8, sensitivities, { entropyGradient });
        expect(asked.length, 'more than one part').toBeGreaterThan(1);
        expect(asked[asked.length - 1][1]).toBe(cLogp.flat().length);
        expect(maxDiff(step.logprobs, pass.logprobs)).toBeLessThan(logpTolerance);
        expect(maxDiff(step.entropies, pass.entropies)).toBeLessThan(logpTolerance);
        expectGradient(step.gradient, want, gradTolerance);
      }
      await engine.release();
    }
  });

  it('takes a non-zero d entropy through the head\'s backward even when told there is no entropy term', async () => {
    const { weights, adapter, groups, cLogp, cEntropy } = setup(VARIANTS[0][1]);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    const want = await (await engine.forward(adapter, groups, 0.8)).backward(cLogp, cEntropy);
    const { sensitivities } = linear(cLogp, cEntropy);
    expectGradient((await engine.forwardBackward(adapter, groups, 0.8, sensitivities, { entropyGradient: false })).gradient, want, 1e-6);
    await engine.release();
  });

  it('splits a micro-batch whose activations exceed the budget into kept parts of rows, or recomputes it whole, to the same gradient', async () => {
    const variant = VARIANTS[3][1];
    const { weights, adapter, rng } = setup(variant);
    const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * weights.shape.vocabSize));
    // Four 150-token completions: one 620-token micro-batch, in parts of two rows (KEPT_PART_TOKENS) when kept.
    const groups: GraphGroup[] = [{ promptIds: draw(5), completions: [draw(150), draw(150), draw(149), draw(150)] }];
    const cLogp = groups[0].completions.map((c) => c.map(() => 2 * rng() - 1));
    const noEntropy = cLogp.map((row) => row.map(() => 0));
    const whole = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64' });
    const want = await (await whole.forward(adapter, groups, 1)).backward(cLogp, noEntropy);
    // Kept in one pool (Node's default) and as onnxruntime hands them back (a page's).
    for (const [activationBudget, parts, keptPool] of [[undefined, 2, true], [undefined, 2, false], [0, 1, true]] as const) {
      const engine = await LoraGraphs.create(runtime, weights, config(adapter), { precision: 'float64', keptPool, ...(activationBudget === undefined ? {} : { activationBudget }) });
      const { sensitivities, asked } = linear(cLogp, noEntropy);
      const step = await engine.forwardBackward(adapter, groups, 1, sensitivities, { entropyGradient: false });
      expect(asked.length).toBe(parts);
      // Summed into float32 arrays part by part: equal to float32 rounding.
      expectGradient(step.gradient, want, 1e-6);
      await engine.release();
    }
    await whole.release();
  });

  it('refuses sensitivities of the wrong length with an InvalidInputError', async () => {
    const { weights, adapter, groups } = setup(VARIANTS[0][1]);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter));
    const short = () => ({ dLogp: [0], dEntropy: [0] });
    await expect(engine.forwardBackward(adapter, groups, 1, short)).rejects.toThrow(InvalidInputError);
    await expect(engine.forwardBackward(adapter, groups, 1, short)).rejects.toThrow(/sensitivities/);
    await engine.release();
  });
});

describe("the head's table in its session (headTable 'session', a page's default)", () => {
  const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((r, i) => r.map((v, k) => Math.abs(v - b[i][k]))));
  /** The weights with tables of their own: the session's placement releases the ones it is given. */
  const ownTables = (weights: ReturnType<typeof randomDecoder>) => ({ ...weights, embedding: weights.embedding.slice(), ...(weights.lmHead ? { lmHead: weights.lmHead.slice() } : {}) });

  it.each(VARIANTS)('%s: the log-probs, entropies (1e-6) and gradients (1e-5 of the largest) of the table fed as an input, through the head\'s backward and its forward\'s d log p / d hidden', async (_, variant) => {
    const { weights, adapter, groups, cLogp, cEntropy } = setup(variant);
    const noEntropy = cEntropy.map((row) => row.map(() => 0));
    // Head chunks of two rows: several runs of each branch.
    const input = await LoraGraphs.create(runtime, weights, config(adapter), { headTable: 'input', headRows: 2 });
    const session = await LoraGraphs.create(runtime, ownTables(weights), config(adapter), { headTable: 'session', headRows: 2 });
    for (const [dEntropy, entropyGradient] of [[cEntropy, true], [noEntropy, false]] as const) {
      const want = await input.forward(adapter, groups, 0.8, { entropyGradient });
      const got = await session.forward(adapter, groups, 0.8, { entropyGradient });
      expect(maxDiff(got.logprobs, want.logprobs)).toBeLessThan(1e-6);
      expect(maxDiff(got.entropies, want.entropies)).toBeLessThan(1e-6);
      const g = tensors(await got.backward(cLogp, dEntropy));
      tensors(await want.backward(cLogp, dEntropy)).forEach((w, j) => {
        const scale = Math.max(...Array.from(w, Math.abs));
        expect(scale).toBeGreaterThan(0);
        expect(Math.max(...Array.from(w, (v, i) => Math.abs(v - g[j][i]))) / scale, `tensor ${j}`).toBeLessThan(1e-5);
      });
    }
    await input.release();
    await session.release();
  });

  it('releases the tables it was given, so those weights build no more graphs (an InvalidInputError saying to read them again); float64 graphs take the table as an input', async () => {
    const { weights, adapter } = setup(VARIANTS[1][1]);
    const given = ownTables(weights);
    const seen: Array<Record<string, unknown> | undefined> = [];
    const recording: GraphRuntime = { Tensor: runtime.Tensor, InferenceSession: { create: (model, options) => (seen.push(options), runtime.InferenceSession.create(model, options)) } };
    const engine = await LoraGraphs.create(recording, given, config(adapter), { headTable: 'session' });
    // The layers' four sessions, then the head's one: given the tables as external data, without an arena or a prepacked copy of them.
    expect(seen.length).toBe(5);
    expect(seen[4]).toMatchObject({ enableCpuMemArena: false, extra: { 'session.disable_prepacking': '1' } });
    expect((seen[4]?.externalData as unknown[]).length).toBe(2);
    expect(given.embedding.length).toBe(0);
    expect(given.lmHead?.length).toBe(0);
    await expect(LoraGraphs.create(runtime, given, config(adapter))).rejects.toThrow(InvalidInputError);
    await expect(LoraGraphs.create(runtime, given, config(adapter))).rejects.toThrow(/read the weights again/);
    await engine.release();
    await expect(LoraGraphs.create(runtime, ownTables(weights), config(adapter), { headTable: 'session', precision: 'float64' })).rejects.toThrow(/headTable/);
    // Node's default feeds the table: the weights stay whole.
    const node = await LoraGraphs.create(runtime, weights, config(adapter));
    expect(weights.embedding.length).toBe(weights.shape.vocabSize * weights.shape.hiddenSize);
    await node.release();
  });
});

describe('running out of memory', () => {
  it('is an OutOfMemoryError saying what would fit, in the forward and in the backward, and the engine runs again after', async () => {
    const { weights, adapter, groups, cLogp } = setup(VARIANTS[0][1]);
    // onnxruntime-node's own words when an allocation fails inside a run.
    let failAt = -1;
    let runs = 0;
    const failing: GraphRuntime = {
      Tensor: runtime.Tensor,
      InferenceSession: {
        create: async (model, options) => {
          const session = await runtime.InferenceSession.create(model, options);
          return {
            run: async (feeds) => {
              if (runs++ === failAt) throw new Error('failed to call OrtRun(). ERROR_CODE: 6, ERROR_MESSAGE: std::bad_alloc');
              return session.run(feeds);
            },
            release: () => session.release!(),
          };
        },
      },
    };
    const engine = await LoraGraphs.create(failing, weights, config(adapter));
    runs = 0;
    failAt = 1;
    const error = await engine.forward(adapter, groups).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).code).toBe('OutOfMemory');
    expect((error as Error).message).toMatch(/fewer completions .* shorter replies, take a 4-bit model, or give the run a smaller memoryBudget/);
    runs = 0;
    failAt = 4;
    const pass = await engine.forward(adapter, groups);
    await expect(pass.backward(cLogp)).rejects.toThrow(OutOfMemoryError);
    failAt = -1;
    const again = await engine.forward(adapter, groups);
    expect(tensors(await again.backward(cLogp)).every((g) => g.every(Number.isFinite))).toBe(true);
    await engine.release();
  });
});

describe('bad input', () => {
  it('is an InvalidInputError naming what was wrong, and the engine keeps working', async () => {
    const { weights, adapter, groups, cLogp } = setup(VARIANTS[0][1]);
    const engine = await LoraGraphs.create(runtime, weights, config(adapter));
    const other = createLoraAdapter(weights.shape, { r: 2, alpha: 4 });
    await expect(engine.forward(other, groups)).rejects.toThrow(InvalidInputError);
    await expect(engine.forward(adapter, [{ promptIds: [1], completions: [[weights.shape.vocabSize]] }])).rejects.toThrow(/outside the vocabulary/);
    await expect(engine.forward(adapter, [{ promptIds: [], completions: [[1]] }])).rejects.toThrow(/promptIds/);
    await expect(engine.forward(adapter, groups, 0)).rejects.toThrow(/temperature/);
    const pass = await engine.forward(adapter, groups);
    await expect(pass.backward(cLogp.slice(1))).rejects.toThrow(/rows for 4 completions/);
    const grad = await pass.backward(cLogp);
    expect(tensors(grad).every((g) => g.every(Number.isFinite))).toBe(true);
    await engine.release();
  });
});

describe('session options', () => {
  it("opens seven sessions, each with pool threads that block rather than spin between ops, the head's without an arena, under the caller's own options", async () => {
    const { weights, adapter, groups, cLogp } = setup(VARIANTS[0][1]);
    const seen: Array<Record<string, unknown> | undefined> = [];
    const recording: GraphRuntime = {
      Tensor: runtime.Tensor,
      InferenceSession: {
        create: (model, options) => {
          seen.push(options);
          return runtime.InferenceSession.create(model, options);
        },
      },
    };
    const engine = await LoraGraphs.create(recording, weights, config(adapter), { sessionOptions: { intraOpNumThreads: 1, extra: { 'session.set_denormal_as_zero': '1' } } });
    // One structure of layers: its forward, its backward (the first layer's too) and the kept pair; the head's three (forward, forward with d log p / d hidden, backward). Each session holds an arena of its own.
    expect(seen.length).toBe(7);
    for (const options of seen) {
      expect(options).toMatchObject({ intraOpNumThreads: 1, extra: { 'session.intra_op.allow_spinning': '0', 'session.set_denormal_as_zero': '1' } });
    }
    // The layers' four keep onnxruntime's arena; the head's three (the last opened) run without one.
    expect(seen.slice(0, 4).every((options) => options?.enableCpuMemArena === undefined)).toBe(true);
    expect(seen.slice(4).map((options) => options?.enableCpuMemArena)).toEqual([false, false, false]);
    const pass = await engine.forward(adapter, groups);
    expect(tensors(await pass.backward(cLogp)).every((g) => g.every(Number.isFinite))).toBe(true);
    await engine.release();
    // The caller's own choice of arena holds for the head too.
    const arena = await LoraGraphs.create(recording, weights, config(adapter), { sessionOptions: { enableCpuMemArena: true } });
    expect(seen.slice(-7).every((options) => options?.enableCpuMemArena === true)).toBe(true);
    await arena.release();
    // The caller's own entry wins.
    const spinning = await LoraGraphs.create(recording, weights, config(adapter), { sessionOptions: { extra: { 'session.intra_op.allow_spinning': '1' } } });
    expect(seen.at(-1)).toMatchObject({ extra: { 'session.intra_op.allow_spinning': '1' } });
    await spinning.release();
  });
});
