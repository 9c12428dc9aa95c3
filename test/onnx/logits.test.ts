import { describe, expect, it } from 'vitest';
import { halfToFloat, scoreToken } from '../../lib/policy/logits.js';

describe('scoreToken', () => {
  const logits = Float32Array.of(0.5, -1, 2, 0.25);
  const logSoftmax = (t: number) => {
    const z = Array.from(logits, (l) => l / t);
    const max = Math.max(...z);
    const logZ = max + Math.log(z.reduce((s, v) => s + Math.exp(v - max), 0));
    return z.map((v) => v - logZ);
  };

  it('gives log p and the entropy of softmax(logits / T)', () => {
    const lp = logSoftmax(0.7);
    const { logprob, entropy } = scoreToken(logits, 0, 4, 2, 0.7);
    expect(logprob).toBeCloseTo(lp[2], 12);
    expect(entropy).toBeCloseTo(-lp.reduce((s, v) => s + Math.exp(v) * v, 0), 12);
  });

  it('scores greedy tokens (temperature 0) at temperature 1', () => {
    expect(scoreToken(logits, 0, 4, 1, 0).logprob).toBeCloseTo(logSoftmax(1)[1], 12);
  });
});

describe('halfToFloat', () => {
  it('decodes float16 bit patterns, including subnormals and specials', () => {
    const bits = Uint16Array.of(0x0000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x3555, 0x7c00, 0xfc00, 0x7e00);
    const values = Array.from(halfToFloat(bits, 0, bits.length));
    expect(values.slice(0, 6)).toEqual([0, 1, -2, 65504, 2 ** -24, Math.fround(0.333251953125)]);
    expect(values.slice(6, 8)).toEqual([Infinity, -Infinity]);
    expect(values[8]).toBeNaN();
  });
});
