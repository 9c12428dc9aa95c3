/**
 * The entropy term's gradient (the GRPO loss's entropy bonus and its adaptive control): finite
 * differences of a loss mixing log-probs and entropies against the analytic backward, on every A
 * and B entry of a small random decoder; and the forward's entropies equal -sum p log p of the
 * scored distributions at the completion's tokens.
 */
import { describe, expect, it } from 'vitest';
import { createLoraAdapter, zerosLike } from '../../lib/lora/adapter.js';
import { loraGroupForward, type LoraGroupInput } from '../../lib/lora/model.js';
import { LORA_MODULES } from '../../lib/lora/weights.js';
import { mulberry32 } from '../../lib/math/random.js';
import { randomDecoder } from './random-decoder.js';

const STEP = 1e-4;
const shape = { vocabSize: 19, hiddenSize: 12, intermediateSize: 20, numLayers: 2, numHeads: 2, numKvHeads: 1, headDim: 6, ropeTheta: 1000, rmsNormEps: 1e-6 };

describe('the entropy term', () => {
  it('matches finite differences on every A and B entry', () => {
    const weights = randomDecoder({ shape, tied: false, seed: 31 });
    const adapter = createLoraAdapter(weights.shape, { r: 2, alpha: 4, seed: 32 });
    const rng = mulberry32(33);
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.5;
    const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * shape.vocabSize));
    const group: LoraGroupInput = { promptIds: draw(2), completions: [draw(3), draw(2)] };
    const dlogp = group.completions.map((c) => c.map(() => 2 * rng() - 1));
    const dentropy = group.completions.map((c) => c.map(() => 2 * rng() - 1));
    const options = { temperature: 0.7, precision: 'float64' as const };
    const loss = () => {
      const pass = loraGroupForward(weights, adapter, group, options);
      let total = 0;
      pass.logprobs.forEach((row, i) => row.forEach((lp, t) => (total += dlogp[i][t] * lp + dentropy[i][t] * pass.entropies[i][t])));
      return total;
    };
    const grad = zerosLike(adapter);
    loraGroupForward(weights, adapter, group, options).backward(dlogp, grad, dentropy);
    let checked = 0;
    adapter.layers.forEach((layer, l) => {
      for (const module of LORA_MODULES) {
        for (const which of ['A', 'B'] as const) {
          const params = layer[module]![which];
          const analytic = grad.layers[l][module]![which];
          for (let i = 0; i < params.length; i++) {
            const saved = params[i];
            params[i] = saved + STEP;
            const up = params[i];
            const plus = loss();
            params[i] = saved - STEP;
            const down = params[i];
            const minus = loss();
            params[i] = saved;
            const numeric = (plus - minus) / (up - down);
            const error = Math.abs(numeric - analytic[i]) / Math.max(Math.abs(numeric), Math.abs(analytic[i]), 1e-3);
            expect(error, `layer ${l} ${module}.${which}[${i}]: numeric ${numeric} analytic ${analytic[i]}`).toBeLessThanOrEqual(1e-3);
            checked++;
          }
        }
      }
    });
    expect(checked).toBeGreaterThan(500);
  });

  it('is the entropy of the scored distribution, and a pass without it trains as before', () => {
    const weights = randomDecoder({ shape, tied: true, seed: 41 });
    const adapter = createLoraAdapter(weights.shape, { r: 2, seed: 42 });
    const group: LoraGroupInput = { promptIds: [1, 2], completions: [[3, 4, 5]] };
    const pass = loraGroupForward(weights, adapter, group, { precision: 'float64' });
    for (const h of pass.entropies[0]) {
      expect(h).toBeGreaterThan(0);
      expect(h).toBeLessThanOrEqual(Math.log(shape.vocabSize) + 1e-12);
    }
    // A zero entropy gradient adds nothing: the same gradient as the log-probs' alone.
    const a = zerosLike(adapter);
    const b = zerosLike(adapter);
    loraGroupForward(weights, adapter, group, { precision: 'float64' }).backward([[1, -1, 0.5]], a);
    loraGroupForward(weights, adapter, group, { precision: 'float64' }).backward([[1, -1, 0.5]], b, [[0, 0, 0]]);
    expect(b.layers).toEqual(a.layers);
  });
});
