import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { mulberry32 } from '../../lib/math/random.js';
import { keepThreshold, resolveSampling, sampleToken, type SamplingConfig } from '../../lib/policy/sampling.js';

const config = (overrides: Partial<SamplingConfig> = {}): SamplingConfig => ({ temperature: 1, topK: 0, topP: 1, minP: 0, ...overrides });

/** Reference probabilities of softmax(logits / T), by brute force. */
function softmax(logits: number[], temperature = 1): number[] {
  const z = logits.map((l) => l / temperature);
  const max = Math.max(...z);
  const e = z.map((v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

/** The kept set of each filter, computed the slow, obvious way (sort everything). */
function keptByTopK(logits: number[], k: number): Set<number> {
  const kth = [...logits].sort((a, b) => b - a)[k - 1];
  return new Set(logits.flatMap((l, i) => (l >= kth ? [i] : [])));
}
/** Keeps a token when the mass of strictly more likely tokens is below p (equal ones go together). */
function keptByTopP(probs: number[], p: number): Set<number> {
  return new Set(probs.flatMap((q, i) => (probs.reduce((above, r) => above + (r > q ? r : 0), 0) < p ? [i] : [])));
}

/** Frequencies of sampled ids over n seeded draws. */
function frequencies(logits: number[], cfg: SamplingConfig, n: number): { counts: number[]; samples: ReturnType<typeof sampleToken>[] } {
  const rng = mulberry32(42);
  const data = Float32Array.from(logits);
  const counts = new Array<number>(logits.length).fill(0);
  const samples = [];
  for (let i = 0; i < n; i++) {
    const s = sampleToken(data, 0, logits.length, cfg, rng());
    counts[s.tokenId]++;
    samples.push(s);
  }
  return { counts, samples };
}

// Rounded to float32 up front, as the sampler reads them, so the references see the same numbers.
const logits = Array.from(Float32Array.of(2.5, -1, 0.3, 1.7, 1.7, -3, 0.9, 2.1, -0.4, 0.05));

describe('sampleToken', () => {
  it('samples each token with its softmax probability (inverse CDF over the vocabulary)', () => {
    const n = 40_000;
    const { counts } = frequencies(logits, config({ temperature: 0.8 }), n);
    const probs = softmax(logits, 0.8);
    counts.forEach((c, i) => expect(Math.abs(c / n - probs[i])).toBeLessThan(4 * Math.sqrt(probs[i] / n) + 1e-3));
  });

  it('reports log p under the temperature-scaled distribution (TRL) and under the filtered one', () => {
    const probs = softmax(logits, 0.7);
    const kept = keptByTopK(logits, 3);
    const keptMass = [...kept].reduce((s, i) => s + probs[i], 0);
    const { samples } = frequencies(logits, config({ temperature: 0.7, topK: 3 }), 200);
    for (const s of samples) {
      expect(s.logprob).toBeCloseTo(Math.log(probs[s.tokenId]), 12);
      expect(s.sampledLogprob).toBeCloseTo(Math.log(probs[s.tokenId] / keptMass), 12);
    }
  });

  it('top-k keeps exactly the k most likely tokens, and ties at the boundary', () => {
    const { counts } = frequencies(logits, config({ topK: 3 }), 5000);
    const kept = keptByTopK(logits, 3); // 2.5, 2.1, 1.7 twice: the tie at the 3rd value keeps both
    expect(kept.size).toBe(4);
    counts.forEach((c, i) => expect(c > 0).toBe(kept.has(i)));
  });

  it('top-p keeps the smallest set of most likely tokens reaching p', () => {
    for (const p of [0.3, 0.6, 0.9]) {
      const { counts } = frequencies(logits, config({ topP: p }), 5000);
      const kept = keptByTopP(softmax(logits), p);
      counts.forEach((c, i) => expect(c > 0, `p=${p} token ${i}`).toBe(kept.has(i)));
    }
  });

  it('top-p applies to the top-k renormalized distribution (transformers order)', () => {
    const topK = keptByTopK(logits, 4);
    const probs = softmax(logits);
    const renormalized = probs.map((q, i) => (topK.has(i) ? q : 0));
    const sum = renormalized.reduce((a, b) => a + b, 0);
    const kept = keptByTopP(renormalized.map((q) => q / sum), 0.7);
    const { counts } = frequencies(logits, config({ topK: 4, topP: 0.7 }), 5000);
    counts.forEach((c, i) => expect(c > 0).toBe(kept.has(i)));
  });

  it('min-p drops tokens below min_p times the top probability', () => {
    const probs = softmax(logits, 1.3);
    const top = Math.max(...probs);
    const { counts } = frequencies(logits, config({ temperature: 1.3, minP: 0.3 }), 5000);
    counts.forEach((c, i) => expect(c > 0).toBe(probs[i] >= 0.3 * top));
  });

  it('temperature 0 is greedy: the first maximal logit, logprob at T = 1, sampled logprob 0', () => {
    const data = Float32Array.from([0.5, 3, -1, 3]);
    const s = sampleToken(data, 0, 4, config({ temperature: 0 }), 0.99);
    expect(s.tokenId).toBe(1);
    expect(s.logprob).toBeCloseTo(Math.log(softmax([0.5, 3, -1, 3])[1]), 12);
    expect(s.sampledLogprob).toBe(0);
  });

  it('finds the same kept sets as brute force on a large vocabulary', () => {
    const rng = mulberry32(7);
    const vocab = 5000;
    // Peaked and flat rows, with some exact ties.
    for (const scale of [0.2, 3]) {
      const row = Array.from({ length: vocab }, () => Math.fround(Math.round(rng() * 400) / 100) * scale);
      const z = Float64Array.from(row);
      const max = Math.max(...row);
      const probs = softmax(row);
      const kept = (cfg: SamplingConfig) => {
        const theta = keepThreshold(z, vocab, max, cfg);
        return new Set(row.flatMap((v, i) => (v >= theta ? [i] : [])));
      };
      for (const k of [1, 7, 300, 4999]) expect(kept(config({ topK: k }))).toEqual(keptByTopK(row, k));
      for (const p of [0.05, 0.5, 0.95]) expect(kept(config({ topP: p }))).toEqual(keptByTopP(probs, p));
    }
  });

  it('draws unfiltered rows (its fast path) exactly as the general path does: the same token and bit-identical log-probs', () => {
    const rng = mulberry32(11);
    const vocab = 4096;
    const allowAll = new Uint32Array(vocab / 32).fill(0xffffffff);
    // Topk >= vocab filters nothing either; the all-allowed mask takes the general path.
    for (const cfg of [config(), config({ temperature: 0.7 }), config({ topK: vocab })]) {
      for (const scale of [0.5, 8]) {
        const row = Float32Array.from({ length: vocab }, () => (rng() - 0.5) * scale);
        for (const u of [0, 0.3, rng(), 0.999999]) expect(sampleToken(row, 0, vocab, cfg, u)).toEqual(sampleToken(row, 0, vocab, cfg, u, undefined, allowAll));
      }
    }
  });

  it('reads a row at an offset of a larger logits block', () => {
    const block = Float32Array.from([...new Array(10).fill(0), ...logits]);
    const a = sampleToken(block, 10, 10, config(), 0.37);
    const b = sampleToken(Float32Array.from(logits), 0, 10, config(), 0.37);
    expect(a).toEqual(b);
  });
});

describe('resolveSampling', () => {
  it('fills defaults: temperature 1 and no filtering', () => {
    expect(resolveSampling({})).toEqual({ temperature: 1, topK: 0, topP: 1, minP: 0 });
  });

  it.each([
    [{ temperature: -0.1 }, 'temperature'],
    [{ temperature: Number.NaN }, 'temperature'],
    [{ topK: 1.5 }, 'topK'],
    [{ topK: -1 }, 'topK'],
    [{ topP: 0 }, 'topP'],
    [{ topP: 1.01 }, 'topP'],
    [{ minP: 1 }, 'minP'],
    [{ minP: -0.1 }, 'minP'],
  ])('rejects %o naming %s', (options, argument) => {
    expect(() => resolveSampling(options)).toThrow(InvalidInputError);
    try {
      resolveSampling(options);
    } catch (error) {
      expect((error as InvalidInputError).argument).toBe(argument);
    }
  });
});
