/**
 * The full-parameter training graphs (FullTrainingEngine on onnxruntime-node) on small random decoders
 * (grouped-query and multi-query attention, tied and untied heads, q/k/v biases, q/k norms):
 * central finite differences of the float64 graphs along a random direction through each weight
 * tensor in turn (so every kind of weight is checked on its own), for a loss that is a random
 * linear function of the log-probs and the entropies; and the float32 graphs (what pretraining
 * runs) against those float64 ones, log-probs and every weight's gradient. Then supervised steps
 * lower the answers' negative log-likelihood.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { clipFactor, resolveOptimizer } from '../../lib/train/optimizer.js';
import { mulberry32 } from '../../lib/math/random.js';
import { chunksByLength, FullTrainingEngine } from '../../lib/train/full-engine.js';
import { decoderParameters } from '../../lib/train/graph/lora-graph.js';
import type { EngineBatch } from '../../lib/train/engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { randomDecoder, type Variant } from '../lora/random-decoder.js';

const runtime = ort as unknown as GraphRuntime;
const STEP = 1e-5;
const base = { vocabSize: 23, hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 1000, rmsNormEps: 1e-6 };

const VARIANTS: Array<[string, Variant]> = [
  ['Llama, GQA (2 kv heads for 4), tied head', { shape: base, tied: true, seed: 31 }],
  ['multi-query (1 kv head for 4), untied head', { shape: { ...base, numKvHeads: 1, vocabSize: 17 }, tied: false, seed: 32 }],
  ['Qwen2: q/k/v biases, untied head', { shape: { ...base, numHeads: 2, numKvHeads: 2, headDim: 6 }, tied: false, qkvBias: true, seed: 33 }],
  ['Qwen3: q/k norms, GQA, tied head', { shape: { ...base, headDim: 6 }, tied: true, qkNorm: true, seed: 34 }],
];

function setup(variant: Variant) {
  const weights = randomDecoder(variant);
  const rng = mulberry32(variant.seed + 100);
  const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * weights.shape.vocabSize));
  // Groups of different lengths: padding, a shared prompt, a one-token completion, repeated tokens,
  // and a long group that runs as a graph of its own (chunksByLength), its slots in the middle.
  const batch: EngineBatch<readonly number[]> = [
    { prompt: draw(3), completions: [draw(4), draw(1), draw(3)] },
    { prompt: draw(12), completions: [draw(9)] },
    { prompt: draw(5), completions: [draw(2)] },
  ];
  const slots = batch.reduce((n, g) => n + g.completions.reduce((m, c) => m + c.length, 0), 0);
  const cLogp = Float64Array.from({ length: slots }, () => 2 * rng() - 1);
  const cEntropy = Float64Array.from({ length: slots }, () => 2 * rng() - 1);
  return { weights, batch, cLogp, cEntropy, rng };
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, v, i) => s + v * b[i], 0);

describe.each(VARIANTS)('%s', (_, variant) => {
  it('float64 graphs match central finite differences through each weight tensor', async () => {
    const { weights, batch, cLogp, cEntropy, rng } = setup(variant);
    const engine = await FullTrainingEngine.create(runtime, weights, { precision: 'float64' });
    const options = { temperature: 0.8, reference: false };
    const loss = async () => {
      const stats = await engine.forward(batch, options);
      return dot(stats.logps, cLogp) + dot(stats.entropies, cEntropy);
    };
    await engine.forward(batch, options);
    await engine.backward(cLogp, cEntropy);
    const grads = engine.gradient()!;
    const params = decoderParameters(weights).map((p) => p.tensor);
    expect(grads.length).toBe(params.length);
    for (const [k, p] of params.entries()) {
      expect(grads[k].some((v) => v !== 0), `tensor ${k}`).toBe(true);
      const saved = Float32Array.from(p);
      const direction = Float64Array.from(p, () => 2 * rng() - 1);
      const at = (sign: number) => p.forEach((_, i) => (p[i] = saved[i] + sign * STEP * direction[i]));
      at(1);
      const up = Float64Array.from(p);
      const plus = await loss();
      at(-1);
      const minus = await loss();
      // Weights are float32: the step taken is what the stored values differ by.
      const analytic = Array.from(p).reduce((s, v, i) => s + grads[k][i] * (up[i] - v), 0);
      p.set(saved);
      const numeric = plus - minus;
      expect(Math.abs(numeric - analytic) / Math.abs(numeric), `tensor ${k}: numeric ${numeric} analytic ${analytic}`).toBeLessThan(1e-5);
    }
    engine.dispose();
  });

  it("float32 graphs give the float64 ones' log-probs, entropies (1e-5) and every weight's gradient (1e-4 of the largest)", async () => {
    const { weights, batch, cLogp, cEntropy } = setup(variant);
    const engine = await FullTrainingEngine.create(runtime, weights);
    const double = await FullTrainingEngine.create(runtime, weights, { precision: 'float64' });
    const options = { temperature: 0.7, reference: false };
    const stats = await engine.forward(batch, options);
    await engine.backward(cLogp, cEntropy);
    const exact = await double.forward(batch, options);
    await double.backward(cLogp, cEntropy);
    const got = engine.gradient()!;
    const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Math.max(...Array.from(a, (v, i) => Math.abs(v - b[i])));
    expect(maxDiff(stats.logps, exact.logps)).toBeLessThan(1e-5);
    expect(maxDiff(stats.entropies, exact.entropies)).toBeLessThan(1e-5);
    double.gradient()!.forEach((w, k) => {
      const scale = Math.max(...Array.from(w, Math.abs));
      expect(maxDiff(got[k], w) / scale, `tensor ${k}`).toBeLessThan(1e-4);
    });
    engine.dispose();
    double.dispose();
  });
});

describe('the full-parameter engine', () => {
  it('runs groups of similar length together, shortest first, padding each graph run to at most 1.25x its tokens', () => {
    expect(chunksByLength([8, 20, 6])).toEqual([[2, 0], [1]]);
    expect(chunksByLength([5, 5, 5])).toEqual([[0, 1, 2]]);
    expect(chunksByLength([])).toEqual([]);
  });

  it('lowers the negative log-likelihood of the answers (dlogp = -1/N) over supervised steps, and resumes from its state', async () => {
    const weights = randomDecoder({ shape: { ...base, vocabSize: 13, hiddenSize: 8, intermediateSize: 12, headDim: 2 }, tied: true, seed: 21 });
    const batch = [{ prompt: [1, 2, 3], completions: [[4, 5, 6]] }];
    const engine = await FullTrainingEngine.create(runtime, weights);
    const optimizer = resolveOptimizer({ lr: 0.01 });
    const nll = async () => -(await engine.forward(batch, { temperature: 1, reference: false })).logps.reduce((a, b) => a + b, 0) / 3;
    const before = await nll();
    const step = async () => {
      await engine.forward(batch, { temperature: 1, reference: false });
      const norm = await engine.backward(Float64Array.from([-1 / 3, -1 / 3, -1 / 3]), new Float64Array(3));
      expect(norm).toBeGreaterThan(0);
      await engine.step(optimizer, clipFactor(norm, optimizer.maxGradNorm));
    };
    for (let i = 0; i < 10; i++) await step();
    const state = await engine.read();
    await step();
    const after11 = await engine.read();
    for (let i = 0; i < 9; i++) await step();
    expect(engine.updates).toBe(20);
    expect(await nll()).toBeLessThan(before * 0.5);
    // The same engine loaded back at update 10 takes update 11 bit for bit.
    engine.load(state);
    expect(engine.updates).toBe(10);
    await step();
    (await engine.read()).weights.forEach((t, k) => expect(t).toEqual(after11.weights[k]));
    engine.dispose();
  });

  it('says what was wrong with bad input', async () => {
    const { weights, batch, cLogp, cEntropy } = setup(VARIANTS[0][1]);
    const engine = await FullTrainingEngine.create(runtime, weights);
    await expect(engine.backward(cLogp, cEntropy)).rejects.toThrow(InvalidInputError);
    await expect(engine.forward(batch, { temperature: 1, reference: true })).rejects.toThrow(/reference/);
    await expect(engine.forward([{ prompt: [1], completions: [[weights.shape.vocabSize]] }], { temperature: 1, reference: false })).rejects.toThrow(/outside the vocabulary/);
    await engine.forward(batch, { temperature: 1, reference: false });
    await expect(engine.backward(cLogp.subarray(1), cEntropy.subarray(1))).rejects.toThrow(/one per scored token/);
    expect(() => engine.load({ weights: [], m: [], v: [], updates: 0 })).toThrow(InvalidInputError);
    engine.dispose();
  });
});
