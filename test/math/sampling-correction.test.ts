import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { appliedEntropyCoef, DEFAULT_IMPORTANCE_SAMPLING, nextAdaptiveEntropy, resolveAdaptiveEntropy, samplingCorrection, samplingMismatch } from '../../lib/math.js';

describe('samplingCorrection', () => {
  it("applies TRL's default (sequence_mask, clipMax 3) when a filter or another temperature was used", () => {
    expect(DEFAULT_IMPORTANCE_SAMPLING).toEqual({ mode: 'sequence_mask', clipMax: 3 });
    for (const sampling of [{ topK: 20 }, { topP: 0.9 }, { minP: 0.05 }, { temperature: 0.7 }]) {
      expect(samplingMismatch(sampling, 1)).toBe(true);
      expect(samplingCorrection(sampling, 1)).toEqual({ mode: 'sequence_mask', clipMax: 3 });
    }
  });
  it('applies none when the sampler drew from softmax(z / T) itself', () => {
    for (const sampling of [{}, { topK: 0, topP: 1, minP: 0 }, { temperature: 0.7 }]) {
      expect(samplingCorrection(sampling, sampling.temperature ?? 1)).toBeUndefined();
    }
    expect(samplingCorrection(undefined, 1)).toBeUndefined();
  });
  it("keeps the user's choice, and null turns it off", () => {
    const chosen = { mode: 'token_truncate' as const, clipMax: 2 };
    expect(samplingCorrection({}, 1, chosen)).toBe(chosen);
    expect(samplingCorrection({ topK: 5 }, 1, null)).toBeUndefined();
    expect(() => samplingMismatch(null as never, 1)).toThrow(InvalidInputError);
  });
});

describe('adaptive entropy', () => {
  it("moves the coefficient by delta toward the target within [min, max], TRL's defaults", () => {
    const o = resolveAdaptiveEntropy({});
    expect(o).toEqual({ target: 0.2, delta: 0.005, min: 0, max: 1 });
    let s: { coef: number; lastEntropy?: number } = { coef: 0.01 };
    expect(appliedEntropyCoef(s, o)).toBe(0); // no measurement yet: no bonus
    s = nextAdaptiveEntropy(s, 0.1, o);
    expect(s.coef).toBeCloseTo(0.015, 15);
    expect(appliedEntropyCoef(s, o)).toBeCloseTo(0.015, 15);
    s = nextAdaptiveEntropy(s, 0.5, o);
    expect(s.coef).toBeCloseTo(0.01, 15);
    // Entropy above the target: no bonus on the next step, and the coefficient keeps falling to min.
    expect(appliedEntropyCoef(s, o)).toBe(0);
    for (let k = 0; k < 5; k++) s = nextAdaptiveEntropy(s, 0.5, o);
    expect(s.coef).toBe(0);
    const capped = resolveAdaptiveEntropy({ max: 0.012 });
    expect(nextAdaptiveEntropy({ coef: 0.01 }, 0, capped).coef).toBe(0.012);
  });
  it('rejects bad options', () => {
    expect(() => resolveAdaptiveEntropy({ min: 1, max: 0 })).toThrow(/adaptiveEntropy.min/);
    expect(() => resolveAdaptiveEntropy({ delta: -1 })).toThrow(/adaptiveEntropy.delta/);
    expect(() => resolveAdaptiveEntropy({ target: NaN })).toThrow(/adaptiveEntropy.target/);
  });
});
