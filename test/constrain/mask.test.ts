import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { applyTokenMask, compileResponseFormat, countAllowed, isAllowed, maskedLogSoftmax, maskedLogSumExp, tokenVocabulary } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { resolveSampling, sampleToken } from '../../lib/policy/sampling.js';
import { syntheticByteBpe } from '../fixtures/vocabularies.js';

const bpe = syntheticByteBpe(3000);

describe('the allowed-token bitset', () => {
  it('equals trying every token one by one, at every step of a walk (partial UTF-8 tokens included)', () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 6 }, tags: { type: 'array', items: { enum: ['é', '中文', 'x'] }, maxItems: 3 }, n: { type: 'number' } },
      required: ['name'],
      additionalProperties: false,
    };
    const grammar = compileResponseFormat({ type: 'json_schema', schema });
    const rng = mulberry32(9);
    for (let walk = 0; walk < 2; walk++) {
      const matcher = grammar.matcher(bpe.vocabulary);
      for (let step = 0; step < 30 && !matcher.isFinished(); step++) {
        const mask = matcher.allowed();
        // The oracle: which tokens a clone accepts, one by one (a refusal is always InvalidInputError).
        const allowed: number[] = [];
        const refusals = new Set<string>();
        for (let id = 0; id < bpe.bytes.length; id++) {
          try {
            matcher.clone().accept(id);
            allowed.push(id);
          } catch (error) {
            refusals.add(error instanceof InvalidInputError ? 'InvalidInputError' : String(error));
          }
        }
        expect([...refusals].filter((r) => r !== 'InvalidInputError'), `step ${step}`).toEqual([]);
        // One comparison per step: the bitset's and canAccept's answers for every token against the oracle's.
        const ids = bpe.bytes.map((_, id) => id);
        expect(ids.filter((id) => isAllowed(mask, id)), `bitset at step ${step}`).toEqual(allowed);
        expect(ids.filter((id) => matcher.canAccept(id)), `canAccept at step ${step}`).toEqual(allowed);
        expect(countAllowed(mask, bpe.bytes.length)).toBe(allowed.length);
        matcher.accept(allowed[Math.floor(rng() * allowed.length)]);
      }
    }
  });

  it('keeps clones independent and refuses tokens out of turn', () => {
    const grammar = compileResponseFormat({ type: 'regex', pattern: 'ab|ac' });
    const a = grammar.matcher(bpe.vocabulary);
    a.accept(5 + 0x61);
    const b = a.clone();
    a.accept(5 + 0x62);
    expect(a.isComplete()).toBe(true);
    expect(b.isComplete()).toBe(false);
    expect(() => b.accept(0)).toThrow(/before the constrained output was complete/);
    expect(() => b.accept(5 + 0x62 + 10)).toThrow(/does not continue/);
    expect(() => b.accept(3000)).toThrow(InvalidInputError);
    b.accept(5 + 0x63);
    b.accept(0);
    expect(b.isFinished()).toBe(true);
    // A finished row may only repeat end-of-sequence.
    expect(countAllowed(b.allowed(), 3000)).toBe(1);
    expect(isAllowed(b.allowed(), 0)).toBe(true);
    expect(() => b.accept(5 + 0x61)).toThrow(/after the end-of-sequence/);
  });

  it('counts the bytes still needed to complete', () => {
    const grammar = compileResponseFormat({ type: 'json_schema', schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false } });
    const m = grammar.matcher(bpe.vocabulary);
    expect(m.minBytesToComplete()).toBe('{"ok":true}'.length);
    for (const c of '{"ok":f') m.accept(5 + c.charCodeAt(0));
    expect(m.minBytesToComplete()).toBe('alse}'.length);
  });

  it('says when the vocabulary cannot write what the format needs', () => {
    const ascii = tokenVocabulary([new Uint8Array(0), ...Array.from({ length: 95 }, (_, i) => Uint8Array.of(32 + i))], [0]);
    const m = compileResponseFormat({ type: 'json_schema', schema: { const: 'é' } }).matcher(ascii);
    m.accept(1 + 0x22 - 32);
    expect(() => m.allowed()).toThrow(/cannot write/);
    expect(() => tokenVocabulary([Uint8Array.of(1)], [])).toThrow(InvalidInputError);
    expect(() => tokenVocabulary([Uint8Array.of(1)], [4])).toThrow(/not a token id/);
  });
});

describe('masking logits', () => {
  const row = fc.integer({ min: 1, max: 90 }).chain((v) =>
    fc.tuple(
      fc.array(fc.double({ min: -30, max: 30, noNaN: true }), { minLength: v, maxLength: v }),
      fc.array(fc.boolean(), { minLength: v, maxLength: v }),
      fc.nat(v - 1),
    ),
  );
  const bitset = (bits: boolean[]) => {
    const mask = new Uint32Array(Math.ceil(bits.length / 32));
    bits.forEach((on, id) => on && (mask[id >>> 5] |= 1 << (id & 31)));
    return mask;
  };

  it('mask then renormalise equals log-softmax over the allowed logits, by hand', () => {
    fc.assert(
      fc.property(row, ([logits, bits, forced]) => {
        bits[forced] = true;
        const mask = bitset(bits);
        const kept = logits.filter((_, i) => bits[i]);
        const max = Math.max(...kept);
        const lse = max + Math.log(kept.reduce((s, z) => s + Math.exp(z - max), 0));
        expect(maskedLogSumExp(logits, 0, logits.length, mask)).toBeCloseTo(lse, 10);
        const out = maskedLogSoftmax(logits, 0, logits.length, mask);
        logits.forEach((z, i) => {
          if (bits[i]) expect(out[i]).toBeCloseTo(z - lse, 10);
          else expect(out[i]).toBe(-Infinity);
        });
        // Unconstrained log-probs renormalise to the same values (the shift cancels).
        const full = Math.max(...logits) + Math.log(logits.reduce((s, z) => s + Math.exp(z - Math.max(...logits)), 0));
        const fromLogprobs = maskedLogSoftmax(logits.map((z) => z - full), 0, logits.length, mask);
        logits.forEach((_, i) => bits[i] && expect(fromLogprobs[i]).toBeCloseTo(out[i], 9));
      }),
      { numRuns: 300, seed: 1905 },
    );
  });

  it('applied in place before sampling, only allowed tokens are drawn, with their constrained log-prob', () => {
    fc.assert(
      fc.property(row, fc.double({ min: 0, max: 0.999, noNaN: true }), ([logits, bits, forced], u) => {
        bits[forced] = true;
        const mask = bitset(bits);
        const masked = Float32Array.from(logits);
        const offset = 3;
        const padded = new Float32Array(masked.length + offset);
        padded.set(masked, offset);
        applyTokenMask(padded, offset, logits.length, mask);
        const token = sampleToken(padded, offset, logits.length, resolveSampling({ temperature: 1 }), u);
        expect(bits[token.tokenId]).toBe(true);
        const expected = maskedLogSoftmax(Float32Array.from(logits), 0, logits.length, mask)[token.tokenId];
        expect(token.sampledLogprob).toBeCloseTo(expected, 5);
      }),
      { numRuns: 300, seed: 1906 },
    );
  });

  it('refuses a mask shorter than the row', () => {
    expect(() => applyTokenMask(new Float32Array(40), 0, 40, new Uint32Array(1))).toThrow(InvalidInputError);
  });
});
