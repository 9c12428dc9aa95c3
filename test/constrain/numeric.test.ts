/**
 * Numeric keywords and string formats in constrained decoding. Integers: for random bounds and
 * divisors every integer near the range is accepted exactly when it is in it (the automaton is the
 * whole range, not a part of it). Decimals: every text accepted lies within the bounds by an exact
 * decimal comparison and after JSON.parse, and every short canonical decimal within them is
 * accepted. Formats: random completions validate under ajv-formats (full mode), and hand-picked
 * edge cases (February 29, 23:59:59, 255.255.255.255) go the right way.
 */
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, type JsonSchema } from '../../lib/index.js';
import { compileResponseFormat, type ResponseGrammar } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { characterVocabulary, syntheticByteBpe } from '../fixtures/vocabularies.js';
import { randomWalk } from './walk.js';

const ajv = new Ajv({ strict: false });
addFormats.default(ajv);
const tv = syntheticByteBpe(3000);
const chars = characterVocabulary();
const utf8 = new TextEncoder();

/** Whether `text` is a complete output of `grammar`, byte by byte (the synthetic vocabulary's single bytes are ids 5..260). */
function accepts(grammar: ResponseGrammar, text: string): boolean {
  const m = grammar.matcher(tv.vocabulary);
  try {
    for (const b of utf8.encode(text)) m.accept(5 + b);
  } catch {
    return false;
  }
  return m.isComplete();
}

const schemaOf = (schema: JsonSchema) => compileResponseFormat({ type: 'json_schema', schema });

/** a <=> b for decimal texts, exactly (BigInt on a common scale). */
function compareDecimal(a: string, b: string): number {
  const parse = (t: string) => {
    const negative = t.startsWith('-');
    const [int, frac = ''] = t.replace('-', '').split('.');
    return { negative, int, frac };
  };
  const [x, y] = [parse(a), parse(b)];
  const scale = Math.max(x.frac.length, y.frac.length);
  const value = (p: { negative: boolean; int: string; frac: string }) => BigInt(p.int + p.frac.padEnd(scale, '0')) * (p.negative ? -1n : 1n);
  const [u, v] = [value(x), value(y)];
  return u < v ? -1 : u > v ? 1 : 0;
}

describe('integer ranges', () => {
  it('accept exactly the integers in range (and multiples), written canonically', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -400, max: 400 }),
        fc.integer({ min: 0, max: 300 }),
        fc.record({ exMin: fc.boolean(), exMax: fc.boolean(), open: fc.constantFrom('none', 'min', 'max'), multipleOf: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }) }),
        (lo, width, o) => {
          const hi = lo + width;
          const schema: Record<string, unknown> = { type: 'integer' };
          if (o.open !== 'min') schema[o.exMin ? 'exclusiveMinimum' : 'minimum'] = lo;
          if (o.open !== 'max') schema[o.exMax ? 'exclusiveMaximum' : 'maximum'] = hi;
          if (o.multipleOf !== undefined) schema.multipleOf = o.multipleOf;
          let grammar: ResponseGrammar;
          try {
            grammar = schemaOf(schema);
          } catch (error) {
            // Only an empty range may be refused, naming the schema.
            expect(error).toBeInstanceOf(InvalidInputError);
            for (let n = lo; n <= hi; n++) expect(ajv.validate(schema, n), `${n} fits ${JSON.stringify(schema)}`).toBe(false);
            return;
          }
          for (let n = lo - 25; n <= hi + 25; n++) {
            expect(accepts(grammar, String(n)), `${n} for ${JSON.stringify(schema)}`).toBe(ajv.validate(schema, n));
          }
          const inside = o.open === 'min' ? hi - (o.exMax ? 1 : 0) : lo + (o.exMin ? 1 : 0);
          for (const form of [`0${Math.abs(inside)}`, `${inside}.0`, `+${inside}`, `${inside}e0`, ' ']) expect(accepts(grammar, form), form).toBe(false);
          expect(accepts(grammar, '-0')).toBe(false);
        },
      ),
      { numRuns: 60, seed: 25 },
    );
  });

  it('cover 15-digit bounds and bounds that are not integers', () => {
    const wide = schemaOf({ type: 'integer', minimum: -999_999_999_999_999, maximum: 999_999_999_999_999 });
    for (const n of ['999999999999999', '-999999999999999', '0', '123456789012345']) expect(accepts(wide, n), n).toBe(true);
    expect(accepts(wide, '1000000000000000')).toBe(false);
    const half = schemaOf({ type: 'integer', minimum: 0.5, exclusiveMaximum: 3.5 });
    expect(['0', '1', '2', '3', '4'].map((n) => accepts(half, n))).toEqual([false, true, true, true, false]);
    // Draft 4's boolean exclusiveMinimum makes minimum exclusive.
    const draft4 = schemaOf({ type: 'integer', minimum: 2, exclusiveMinimum: true, maximum: 4 });
    expect(['2', '3', '4'].map((n) => accepts(draft4, n))).toEqual([false, true, true]);
    // The tighter of minimum and exclusiveMinimum wins.
    const both = schemaOf({ type: 'integer', minimum: 5, exclusiveMinimum: 6, maximum: 9 });
    expect(['6', '7'].map((n) => accepts(both, n))).toEqual([false, true]);
  });

  it('a judge score 0..9 is one digit and nothing else, on the character vocabulary too', () => {
    const grammar = schemaOf({ type: 'object', properties: { score: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['score'], additionalProperties: false });
    const rng = mulberry32(4);
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const { text, finished } = randomWalk(grammar, chars, rng);
      expect(finished).toBe(true);
      const { score } = JSON.parse(text) as { score: number };
      expect(Number.isInteger(score) && score >= 0 && score <= 9, text).toBe(true);
      seen.add(score);
    }
    expect(seen.size).toBe(10);
  });
});

describe('decimal ranges', () => {
  const decimal = fc
    .tuple(fc.integer({ min: -3000, max: 3000 }), fc.constantFrom(0, 1, 2, 3))
    .map(([n, places]) => (places === 0 ? String(n) : (n / 10 ** places).toFixed(places)).replace(/\.?0+$/, (m) => (m.includes('.') ? '' : m)));

  it('accept exactly the short decimals within the bounds', () => {
    fc.assert(
      fc.property(decimal, decimal, fc.boolean(), fc.boolean(), fc.array(decimal, { minLength: 30, maxLength: 30 }), (a, b, exMin, exMax, probes) => {
        const [lo, hi] = compareDecimal(a, b) <= 0 ? [a, b] : [b, a];
        const schema = { type: 'number', [exMin ? 'exclusiveMinimum' : 'minimum']: Number(lo), [exMax ? 'exclusiveMaximum' : 'maximum']: Number(hi) };
        let grammar: ResponseGrammar;
        try {
          grammar = schemaOf(schema);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidInputError);
          expect(compareDecimal(lo, hi) === 0 && (exMin || exMax)).toBe(true);
          return;
        }
        const texts = [...probes, lo, hi, `${lo}1`.includes('.') ? `${lo}1` : `${lo}.1`, `${hi}1`.includes('.') ? `${hi}1` : `${hi}.1`];
        for (const text of texts) {
          if (text === '-0') continue;
          const above = compareDecimal(text, lo);
          const below = compareDecimal(text, hi);
          const inside = (exMin ? above > 0 : above >= 0) && (exMax ? below < 0 : below <= 0);
          expect(accepts(grammar, text), `${text} in ${JSON.stringify(schema)}`).toBe(inside);
          if (inside) expect(ajv.validate(schema, JSON.parse(text))).toBe(true);
        }
      }),
      { numRuns: 150, seed: 26 },
    );
  });

  it('hold exclusive bounds after parsing to a double, and write no exponent or more than 15 digits', () => {
    const grammar = schemaOf({ type: 'number', exclusiveMinimum: 0.1, maximum: 1e300 });
    expect(accepts(grammar, '0.1')).toBe(false);
    expect(accepts(grammar, '0.10000000000001')).toBe(true); // 15 digits
    expect(accepts(grammar, '0.100000000000001')).toBe(false); // 16 digits: could round onto the bound
    expect(accepts(grammar, '1e5')).toBe(false);
    expect(accepts(grammar, '999999999999999')).toBe(true);
    const rng = mulberry32(8);
    for (let i = 0; i < 100; i++) {
      const { text } = randomWalk(grammar, tv, rng);
      expect(JSON.parse(text), text).toBeGreaterThan(0.1);
    }
    // A number's multipleOf makes it an integer multiple.
    const step = schemaOf({ type: 'number', minimum: -10, maximum: 10, multipleOf: 5 });
    expect(['-10', '-5', '0', '5', '10', '2.5', '7'].map((t) => accepts(step, t))).toEqual([true, true, true, true, true, false, false]);
  });
});

describe('string formats', () => {
  const formats = ['date', 'time', 'date-time', 'uuid', 'email', 'ipv4'] as const;

  it.each(formats)('%s: random completions validate under ajv-formats', (format) => {
    const schema = { type: 'object', properties: { v: { type: 'string', format, maxLength: 40 } }, required: ['v'], additionalProperties: false };
    const grammar = schemaOf(schema);
    const validate = ajv.compile(schema);
    const rng = mulberry32(format.length);
    for (let i = 0; i < 40; i++) {
      const { text, finished } = randomWalk(grammar, tv, rng);
      expect(finished).toBe(true);
      if (!validate(JSON.parse(text))) throw new Error(`${text}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('knows the calendar, the clock and the octets', () => {
    const cases: Array<[string, string, boolean]> = [
      ['date', '2024-02-29', true],
      ['date', '2023-02-29', false],
      ['date', '1900-02-29', false],
      ['date', '2000-02-29', true],
      ['date', '2024-04-31', false],
      ['date', '2024-12-31', true],
      ['date', '2024-13-01', false],
      ['time', '23:59:59Z', true],
      ['time', '24:00:00Z', false],
      ['time', '12:30:00.123+05:30', true],
      ['time', '12:30:00', false],
      ['date-time', '2024-02-29T23:59:59.5Z', true],
      ['date-time', '2024-02-30T00:00:00Z', false],
      ['uuid', '123e4567-e89b-12d3-a456-426614174000', true],
      ['uuid', '123e4567-e89b-12d3-a456-42661417400', false],
      ['email', 'a.b+c@example.co.uk', true],
      ['email', 'a..b@example.com', false],
      ['email', 'a@localhost', false],
      ['email', 'a@-example.com', false],
      ['ipv4', '255.255.255.255', true],
      ['ipv4', '256.1.1.1', false],
      ['ipv4', '01.2.3.4', false],
      ['ipv4', '1.2.3', false],
    ];
    for (const [format, value, ok] of cases) {
      const grammar = schemaOf({ type: 'string', format });
      expect(accepts(grammar, JSON.stringify(value)), `${format} ${value}`).toBe(ok);
      // What is accepted, ajv-formats accepts too (the converse need not hold: a sub-language).
      if (ok) expect(ajv.validate({ type: 'string', format }, value), `${format} ${value}`).toBe(true);
    }
  });
});
