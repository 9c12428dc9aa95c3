import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { mulberry32, tokenLogProbs } from '../../lib/math.js';
import { refLogSoftmax } from './reference.js';

function expectInvalid(fn: () => unknown, argument: string) {
  expect(fn).toThrow(InvalidInputError);
  try {
    fn();
  } catch (error) {
    expect((error as InvalidInputError).argument).toBe(argument);
  }
}

describe('tokenLogProbs', () => {
  it('matches log_softmax and entropy by hand', () => {
    // Uniform row: log p = -log 3, entropy log 3. Row [1, 2, 3]: log p(2) = 3 - log(e + e^2 + e^3).
    const { logps, entropy } = tokenLogProbs({ logits: new Float32Array([1, 2, 3, 0, 0, 0]), dims: [1, 2, 3], ids: [2, 1] });
    const z = Math.E + Math.E ** 2 + Math.E ** 3;
    expect(logps[0]).toBeCloseTo(3 - Math.log(z), 14);
    expect(logps[1]).toBeCloseTo(-Math.log(3), 14);
    const p = [Math.E / z, Math.E ** 2 / z, Math.E ** 3 / z];
    expect(entropy[0]).toBeCloseTo(-p.reduce((a, q) => a + q * Math.log(q), 0), 14);
    expect(entropy[1]).toBeCloseTo(Math.log(3), 14);
  });

  it('agrees with the reference on random float32 logits, with temperature', () => {
    const rng = mulberry32(3);
    const [b, t, v] = [3, 5, 257];
    const logits = Float32Array.from({ length: b * t * v }, () => (rng() - 0.5) * 20);
    const ids = Int32Array.from({ length: b * t }, () => Math.floor(rng() * v));
    for (const temperature of [1, 0.7, 1.5]) {
      const got = tokenLogProbs({ logits, dims: [b, t, v], ids, temperature });
      for (let r = 0; r < b * t; r++) {
        const ref = refLogSoftmax(Array.from(logits.subarray(r * v, (r + 1) * v)), ids[r], temperature);
        expect(Math.abs(got.logps[r] - ref.logp)).toBeLessThan(1e-12);
        expect(Math.abs(got.entropy[r] - ref.entropy)).toBeLessThan(1e-12);
      }
    }
  });

  it('stays finite for huge logits and handles -Infinity (masked) vocabulary', () => {
    const { logps, entropy } = tokenLogProbs({
      logits: new Float64Array([1e4, 1e4 - 1, -Infinity, -Infinity]),
      dims: [1, 1, 4],
      ids: [0],
    });
    expect(logps[0]).toBeCloseTo(-Math.log(1 + Math.exp(-1)), 14);
    const p = 1 / (1 + Math.exp(-1));
    expect(entropy[0]).toBeCloseTo(-(p * Math.log(p) + (1 - p) * Math.log(1 - p)), 14);
    const masked = tokenLogProbs({ logits: [0, -Infinity], dims: [1, 1, 2], ids: [1] });
    expect(masked.logps[0]).toBe(-Infinity);
    expect(masked.entropy[0]).toBe(0);
  });

  it('reads BigInt64Array ids (as transformers.js returns them)', () => {
    const logits = new Float32Array([0.5, -1, 2, 0]);
    const a = tokenLogProbs({ logits, dims: [2, 1, 2], ids: new BigInt64Array([1n, 0n]) });
    const b = tokenLogProbs({ logits, dims: [2, 1, 2], ids: [1, 0] });
    expect(a).toEqual(b);
    expect(tokenLogProbs({ logits, dims: [2, 1, 2], ids: [[1], [0]] })).toEqual(b);
    expectInvalid(() => tokenLogProbs({ logits, dims: [2, 1, 2], ids: [[1, 0]] }), 'ids');
  });

  it('rejects bad shapes, ids, temperatures and logits', () => {
    const logits = new Float32Array(6);
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2, 4], ids: [0, 0] }), 'logits');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2], ids: [0, 0] }), 'dims');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 0, 6], ids: [] }), 'dims');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2, 3], ids: [0] }), 'ids');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2, 3], ids: [0, 3] }), 'ids');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2, 3], ids: [0, 1.5] }), 'ids');
    expectInvalid(() => tokenLogProbs({ logits, dims: [1, 2, 3], ids: [0, 0], temperature: 0 }), 'temperature');
    expectInvalid(() => tokenLogProbs({ logits: new Float32Array([0, NaN, 0, 0, 0, 0]), dims: [1, 2, 3], ids: [0, 0] }), 'logits');
    expectInvalid(() => tokenLogProbs({ logits: new Float32Array([0, Infinity, 0, 0, 0, 0]), dims: [1, 2, 3], ids: [0, 0] }), 'logits');
  });
});
