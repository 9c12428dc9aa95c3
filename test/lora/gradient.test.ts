/**
 * Finite differences of every A and B entry of every adapted projection, in every layer, against
 * the analytic backward, on small random decoders: grouped-query and multi-query attention, tied
 * and untied heads, Qwen2-style q/k/v biases, Qwen3-style q/k norms, with and without activation
 * recomputation, over a group of completions sharing one prompt. The loss is a random linear
 * function of the completions' log-probs (what grpoLoss hands back as d loss / d logp), so every
 * log-prob's gradient path is exercised.
 */
import { describe, expect, it } from 'vitest';
import { createLoraAdapter, zerosLike, type LoraAdapter } from '../../lib/lora/adapter.js';
import { loraGroupForward, type LoraGroupInput } from '../../lib/lora/model.js';
import { LORA_MODULES } from '../../lib/lora/weights.js';
import { mulberry32 } from '../../lib/math/random.js';
import { randomDecoder, type Variant } from './random-decoder.js';

/** Small enough that the central difference's O(step^2) error stays far below the tolerance. */
const STEP = 1e-4;
const base = { vocabSize: 23, hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 1000, rmsNormEps: 1e-6 };

const VARIANTS: Array<[string, Variant]> = [
  ['Llama, GQA (2 kv heads for 4), tied head', { shape: base, tied: true, seed: 1 }],
  ['multi-query (1 kv head for 4), untied head', { shape: { ...base, numKvHeads: 1, vocabSize: 17 }, tied: false, seed: 2 }],
  ['Qwen2: q/k/v biases, untied head', { shape: { ...base, numHeads: 2, numKvHeads: 2, headDim: 6 }, tied: false, qkvBias: true, seed: 3 }],
  ['Qwen3: q/k norms, GQA, tied head, 3 layers', { shape: { ...base, numLayers: 3, headDim: 6 }, tied: true, qkNorm: true, seed: 4 }],
];

function randomise(adapter: LoraAdapter, seed: number): void {
  const rng = mulberry32(seed);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.5;
}

describe.each(VARIANTS)('%s', (_, variant) => {
  it.each([false, true])('matches finite differences on every A and B entry (recompute %s)', (recompute) => {
    const weights = randomDecoder(variant);
    // B away from zero, so dA is not zero and A's path through B is checked too.
    const adapter = createLoraAdapter(weights.shape, { r: 3, alpha: 6, seed: variant.seed });
    randomise(adapter, variant.seed + 100);
    const rng = mulberry32(variant.seed + 200);
    const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * weights.shape.vocabSize));
    // A group: the prompt is shared, so its gradient collects all three completions'.
    const group: LoraGroupInput = { promptIds: draw(3), completions: [draw(4), draw(1), draw(3)] };
    const coefficients = group.completions.map((c) => c.map(() => 2 * rng() - 1));
    const temperature = 0.8;
    const options = { temperature, precision: 'float64' as const, recompute };
    const loss = () =>
      loraGroupForward(weights, adapter, group, options).logprobs.reduce((s, row, i) => s + row.reduce((t, lp, k) => t + coefficients[i][k] * lp, 0), 0);

    const grad = zerosLike(adapter);
    loraGroupForward(weights, adapter, group, options).backward(coefficients, grad);

    let checked = 0;
    let worst = 0;
    adapter.layers.forEach((layer, l) => {
      for (const module of LORA_MODULES) {
        const pair = layer[module]!;
        for (const which of ['A', 'B'] as const) {
          const params = pair[which];
          const analytic = grad.layers[l][module]![which];
          for (let i = 0; i < params.length; i++) {
            const saved = params[i];
            // Parameters are float32: the step actually taken is what the stored values differ by.
            params[i] = saved + STEP;
            const up = params[i];
            const plus = loss();
            params[i] = saved - STEP;
            const down = params[i];
            const minus = loss();
            params[i] = saved;
            const numeric = (plus - minus) / (up - down);
            const error = Math.abs(numeric - analytic[i]) / Math.max(Math.abs(numeric), Math.abs(analytic[i]), 1e-3);
            worst = Math.max(worst, error);
            expect(error, `layer ${l} ${module}.${which}[${i}]: numeric ${numeric} analytic ${analytic[i]}`).toBeLessThanOrEqual(1e-3);
            checked++;
          }
        }
      }
    });
    expect(checked).toBe(adapter.layers.reduce((n, layer) => n + Object.values(layer).reduce((s, p) => s + p.A.length + p.B.length, 0), 0));
    expect(worst).toBeLessThan(1e-3);
  });
});
