import { describe, expect, it } from 'vitest';
import { GrpoRouter, InvalidInputError } from '../../lib/index.js';
import type { Rng } from '../../lib/math.js';
import { deriveQueryClass } from '../../lib/methods/router/query-class.js';

/** An Rng that replays fixed values, so each routing decision is known in advance. */
const replay = (...values: number[]): Rng => {
  let i = 0;
  return () => values[i++ % values.length];
};

describe('GrpoRouter', () => {
  it('updates weights by lr * (reward - mean) / population std, per query class', () => {
    const router = new GrpoRouter({ learningRate: 0.5 });
    router.addSample('math', 'a', 1);
    router.addSample('math', 'b', 0);
    router.addSample('math', 'a', 1);
    router.addSample('math', 'c', 0);
    router.addSample('code', 'a', 3); // a group of one is skipped
    const stats = router.update();
    expect(stats).toEqual({ updated: true, samplesProcessed: 5, groups: 2, updatesApplied: 4, totalUpdates: 1 });
    // math rewards [1, 0, 1, 0]: mean 0.5, population std 0.5, advantages +-1; 'a' gets two +1 steps.
    expect(router.weight('a', 'math')).toBeCloseTo(1, 15);
    expect(router.weight('b', 'math')).toBeCloseTo(-0.5, 15);
    expect(router.weight('c', 'math')).toBeCloseTo(-0.5, 15);
    expect(router.weight('a', 'code')).toBe(0);
    expect(router.sampleCount('math')).toBe(4);
    expect(router.pendingSamples).toEqual([]);
    expect(router.update()).toEqual({ updated: false, reason: 'no samples' });
  });

  it('uses std 1 when all rewards of a class are equal (advantage 0)', () => {
    const router = new GrpoRouter();
    router.addSample('q', 'a', 2);
    router.addSample('q', 'b', 2);
    router.update();
    expect(router.weight('a', 'q')).toBe(0);
    expect(router.weight('b', 'q')).toBe(0);
  });

  it('routes uniformly below minSamples, then samples softmax(weights / temperature)', () => {
    const router = new GrpoRouter({ minSamples: 2, temperature: 0.5, rng: replay(0.7, 0.2, 0.9) });
    const models = ['a', 'b', 'c'];
    expect(router.route({ queryClass: 'q' }, models)).toBe('c'); // floor(0.7 * 3) = 2
    router.addSample('q', 'a', 1);
    router.addSample('q', 'b', 0);
    router.update();
    // Weights a = 0.1, b = -0.1, c = 0: softmax of [0.2, -0.2, 0].
    const z = [Math.exp(0.2), Math.exp(-0.2), 1];
    const total = z[0] + z[1] + z[2];
    const probs = router.probabilities('q', models);
    probs.forEach((p, i) => expect(p).toBeCloseTo(z[i] / total, 15));
    // r = 0.2 <= p(a) = 0.41; r = 0.9 > p(a) + p(b) = 0.69.
    expect(router.route({ queryClass: 'q' }, models)).toBe('a');
    expect(router.route({ queryClass: 'q' }, models)).toBe('c');
  });

  it('is reproducible from its seed', () => {
    const pick = (seed: number) => {
      const router = new GrpoRouter({ seed, minSamples: 0 });
      return Array.from({ length: 20 }, () => router.route('hello', ['x', 'y', 'z']));
    };
    expect(pick(5)).toEqual(pick(5));
    expect(new Set(pick(5)).size).toBeGreaterThan(1);
  });

  it('round-trips its state through JSON, pending samples included', () => {
    const router = new GrpoRouter({ learningRate: 0.3, minSamples: 1 });
    router.addSample('q', 'a', 1);
    router.addSample('q', 'b', 0);
    router.update();
    router.addSample('q', 'b', 5);
    const restored = GrpoRouter.fromJSON(JSON.stringify(router));
    expect(restored.toJSON()).toEqual(router.toJSON());
    expect(restored.learningRate).toBe(0.3);
    expect(restored.totalUpdates).toBe(1);
    expect(restored.pendingSamples).toEqual([{ queryClass: 'q', model: 'b', reward: 5 }]);
    restored.reset();
    expect(restored.toJSON()).toMatchObject({ weights: {}, sampleCounts: {}, totalUpdates: 0, buffer: [] });
  });

  it('rejects an empty model list, bad samples and malformed state', () => {
    const router = new GrpoRouter();
    expect(() => router.route('x', [])).toThrow(InvalidInputError);
    expect(() => router.route('x', [])).toThrow(/models/);
    expect(() => router.addSample('q', 'a', NaN)).toThrow(/reward/);
    expect(() => router.addSample('', 'a', 1)).toThrow(/queryClass/);
    expect(() => new GrpoRouter({ temperature: 0 })).toThrow(/temperature/);
    expect(() => GrpoRouter.fromJSON('{nope')).toThrow(InvalidInputError);
    expect(() => GrpoRouter.fromJSON({ ...router.toJSON(), weights: { a: { q: 'x' } } } as never)).toThrow(/weights/);
    expect(() => GrpoRouter.fromJSON({ ...router.toJSON(), version: 2 } as never)).toThrow(/version/);
  });
});

describe('deriveQueryClass', () => {
  it('prefers an explicit class, then code, math, length', () => {
    expect(deriveQueryClass({ queryClass: 'billing', query: '```x```' })).toBe('billing');
    expect(deriveQueryClass('Fix this:\n```js\nlet x = 1\n```')).toBe('code');
    expect(deriveQueryClass('def f(x):\n  return x')).toBe('code');
    expect(deriveQueryClass('What is 12 * 7?')).toBe('math');
    expect(deriveQueryClass({ query: 'hi', hasMath: true })).toBe('math');
    expect(deriveQueryClass('Hello there')).toBe('short');
    expect(deriveQueryClass('a'.repeat(501))).toBe('long');
    expect(deriveQueryClass({ queryLength: 100 })).toBe('general');
    expect(deriveQueryClass({ query: 'x'.repeat(80), hasCode: false })).toBe('general');
  });
});
