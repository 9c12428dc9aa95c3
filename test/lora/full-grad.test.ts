/**
 * Finite differences of every base weight (each projection and bias, input and post-attention
 * norms, q/k norms, final norm, embedding, untied head) against the full-parameter backward, on
 * small random decoders in float64 activations. The loss is a random linear function of a group's
 * log-probs, as grpoLoss or supervised training hands back d loss / d logp.
 */
import { describe, expect, it } from 'vitest';
import { decoderGroupForward, decoderParameterCount, decoderTensors, zerosLikeDecoder } from '../../lib/lora/full-grad.js';
import type { LoraGroupInput } from '../../lib/lora/model.js';
import { mulberry32 } from '../../lib/math/random.js';
import { randomDecoder, type Variant } from './random-decoder.js';

const STEP = 1e-3;
const base = { vocabSize: 13, hiddenSize: 8, intermediateSize: 12, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 2, ropeTheta: 1000, rmsNormEps: 1e-6 };

const VARIANTS: Array<[string, Variant]> = [
  ['Llama, GQA, tied head', { shape: base, tied: true, seed: 11 }],
  ['multi-query, untied head, q/k/v biases', { shape: { ...base, numKvHeads: 1, numHeads: 2, headDim: 4 }, tied: false, qkvBias: true, seed: 12 }],
  ['Qwen3: q/k norms, tied head', { shape: { ...base, headDim: 4, numHeads: 2 }, tied: true, qkNorm: true, seed: 13 }],
];

describe.each(VARIANTS)('%s', (_, variant) => {
  it('matches finite differences on every weight of every kind', () => {
    const weights = randomDecoder(variant);
    const rng = mulberry32(variant.seed + 1);
    const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * weights.shape.vocabSize));
    const group: LoraGroupInput = { promptIds: draw(3), completions: [draw(3), draw(2)] };
    const coefficients = group.completions.map((c) => c.map(() => 2 * rng() - 1));
    const options = { temperature: 0.9, precision: 'float64' as const };
    const loss = () => decoderGroupForward(weights, group, options).logprobs.reduce((s, row, i) => s + row.reduce((t, lp, k) => t + coefficients[i][k] * lp, 0), 0);

    const grad = zerosLikeDecoder(weights);
    decoderGroupForward(weights, group, options).backward(coefficients, grad);
    const params = decoderTensors(weights);
    const analytic = decoderTensors(grad);
    let checked = 0;
    params.forEach((p, k) => {
      for (let i = 0; i < p.length; i++) {
        const saved = p[i];
        p[i] = saved + STEP;
        const up = p[i];
        const plus = loss();
        p[i] = saved - STEP;
        const down = p[i];
        const minus = loss();
        p[i] = saved;
        const numeric = (plus - minus) / (up - down);
        const error = Math.abs(numeric - analytic[k][i]) / Math.max(Math.abs(numeric), Math.abs(analytic[k][i]), 1e-2);
        expect(error, `tensor ${k}[${i}]: numeric ${numeric} analytic ${analytic[k][i]}`).toBeLessThanOrEqual(1e-3);
        checked++;
      }
    });
    expect(checked).toBe(decoderParameterCount(weights));
    // Every kind is reached: no tensor's gradient is all zero.
    for (const [k, g] of analytic.entries()) expect(g.some((x) => x !== 0), `tensor ${k}`).toBe(true);
  });
});
