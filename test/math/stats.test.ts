import { describe, expect, it } from 'vitest';
import { logSumExp, mean, mulberry32, nanMean, nanStd, randomInt, softmax, std } from '../../lib/math.js';

describe('stats', () => {
  it('computes means and stds with the torch conventions', () => {
    expect(mean([1, 2, 3, 6])).toBe(3);
    expect(std([1, 2, 3, 6])).toBeCloseTo(Math.sqrt(14 / 3), 15);
    expect(std([1, 2, 3, 6], 0)).toBeCloseTo(Math.sqrt(14 / 4), 15);
    expect(std([5])).toBeNaN();
    expect(nanMean([1, NaN, 3])).toBe(2);
    expect(nanStd([1, NaN, 3])).toBeCloseTo(Math.SQRT2, 15);
    expect(nanStd([1, NaN])).toBeNaN();
    expect(nanMean([NaN])).toBeNaN();
  });

  it('logSumExp and softmax do not overflow', () => {
    expect(logSumExp([1000, 1000])).toBeCloseTo(1000 + Math.LN2, 12);
    expect(logSumExp([])).toBe(-Infinity);
    const p = softmax([1000, 1000 + Math.log(3)]);
    expect(p[0]).toBeCloseTo(0.25, 12);
    expect(p[1]).toBeCloseTo(0.75, 12);
    const hot = softmax([0, Math.log(3)], 0.5);
    expect(hot[1]).toBeCloseTo(0.9, 15);
  });
});

describe('mulberry32', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const xs = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(xs);
    expect(Array.from({ length: 5 }, c)).not.toEqual(xs);
  });

  it('produces floats in [0, 1) that look uniform', () => {
    const rng = mulberry32(1);
    const buckets = new Array(10).fill(0);
    let sum = 0;
    let [min, max] = [Infinity, -Infinity];
    for (let i = 0; i < 100_000; i++) {
      const x = rng();
      [min, max] = [Math.min(min, x), Math.max(max, x)];
      buckets[Math.floor(x * 10)]++;
      sum += x;
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    expect(sum / 100_000).toBeCloseTo(0.5, 2);
    for (const count of buckets) expect(Math.abs(count - 10_000)).toBeLessThan(500);
    const ints = new Set(Array.from({ length: 200 }, () => randomInt(rng, 3)));
    expect([...ints].sort()).toEqual([0, 1, 2]);
  });
});
