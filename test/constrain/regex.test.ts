import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { compileResponseFormat } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { characterVocabulary, syntheticByteBpe, type TestVocabulary } from '../fixtures/vocabularies.js';
import { randomWalk } from './walk.js';

const character = characterVocabulary();
const bpe = syntheticByteBpe(3000);

/** Random patterns of the documented subset, as text. */
function patternArbitrary(unicode: boolean): fc.Arbitrary<string> {
  const literals = ['a', 'b', 'c', 'x', '0', '7', '-', ' ', ',', '\\.', '\\*', '\\(', '\\]', '\\\\', '"', ...(unicode ? ['é', '中', '😀', '\\u00e9'] : [])];
  const classes = ['[a-c]', '[^abc]', '[0-9a-f]', '\\d', '\\w', '\\s', '\\D', '\\W', '.', '[-x]', '[\\d.]', ...(unicode ? ['[à-ÿ]', '[^\\x00-\\x7f]', '[😀-😂]'] : [])];
  const atom = fc.oneof(fc.constantFrom(...literals), fc.constantFrom(...classes));
  const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '+?', '{0,2}');
  const quantified = fc.tuple(atom, quantifier).map(([a, q]) => a + q);
  const alternation = (depth: number): fc.Arbitrary<string> => {
    const item =
      depth === 0
        ? quantified
        : fc.oneof(
            { weight: 4, arbitrary: quantified },
            { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', '(?:', '(?<g>'), alternation(depth - 1), quantifier).map(([open, inner, q]) => `${open}${inner})${q}`) },
          );
    return fc
      .array(fc.array(item, { minLength: 1, maxLength: 4 }).map((items) => items.join('')), { minLength: 1, maxLength: 3 })
      .map((branches) => branches.join('|'));
  };
  // Named groups must have distinct names.
  return alternation(2).map((p) => {
    let n = 0;
    return p.replace(/\(\?<g>/g, () => `(?<g${n++}>`);
  });
}

const cases: Array<[string, TestVocabulary, boolean]> = [
  ['character vocabulary', character, false],
  ['byte-level BPE vocabulary', bpe, true],
];

// Fixed seeds and run counts, as in the fuzz suites: the same patterns every run, so the suite's
// time is bounded (a rare random pattern walks hundreds of new automaton states over 3000 tokens).
describe.each(cases)('random patterns over the %s', (_name, tv, unicode) => {
  it('every completion matches the whole pattern', { timeout: 120_000 }, () => {
    fc.assert(
      fc.property(patternArbitrary(unicode), fc.integer(), (pattern, seed) => {
        const grammar = compileResponseFormat({ type: 'regex', pattern });
        const regex = new RegExp(`^(?:${pattern})$`, 'u');
        const rng = mulberry32(seed);
        for (let walk = 0; walk < 3; walk++) {
          const { text, finished } = randomWalk(grammar, tv, rng);
          expect(finished).toBe(true);
          if (!regex.test(text)) throw new Error(`${JSON.stringify(text)} does not match /${pattern}/u`);
        }
      }),
      { numRuns: unicode ? 30 : 100, seed: unicode ? 7 : 1902 },
    );
  });
});

describe('the regex language, byte by byte', () => {
  /** Feeds the UTF-8 bytes of `text` as single-byte tokens of the BPE vocabulary (ids 5 + byte). */
  function accepts(pattern: string, text: string): boolean {
    const m = compileResponseFormat({ type: 'regex', pattern }).matcher(bpe.vocabulary);
    try {
      for (const b of new TextEncoder().encode(text)) m.accept(5 + b);
    } catch {
      return false;
    }
    return m.isComplete();
  }

  it('accepts a text exactly when RegExp with the u flag matches all of it', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'x', '0', '7', '-', ' ', '.', 'é', '中', '😀', '\n', '"'), maxLength: 7 });
    fc.assert(
      fc.property(patternArbitrary(true), fc.array(text, { minLength: 8, maxLength: 8 }), (pattern, texts) => {
        const regex = new RegExp(`^(?:${pattern})$`, 'u');
        for (const t of texts) expect(accepts(pattern, t)).toBe(regex.test(t));
      }),
      { numRuns: 100, seed: 1903 },
    );
  });

  it('treats anchors at the ends as no-ops and counts characters, not bytes', () => {
    expect(accepts('^\\d{3}-\\d{4}$', '555-1234')).toBe(true);
    expect(accepts('^\\d{3}-\\d{4}$', '555-123')).toBe(false);
    expect(accepts('.{2}', '中😀')).toBe(true);
    expect(accepts('.{2}', '中')).toBe(false);
    expect(accepts('[^a]', '\u{1F600}')).toBe(true);
    expect(accepts('.', '\n')).toBe(false);
  });

  it('rejects what is not regular or not supported, naming the construct', () => {
    const unsupported: Array<[string, RegExp]> = [
      ['(a)\\1', /backreference/],
      ['a(?=b)', /lookaround/],
      ['(?<!a)b', /lookaround/],
      ['\\bword', /word boundary/],
      ['\\p{L}+', /Unicode property/],
      ['a^b', /only at the start or end/],
      ['(a$)b', /only at the start or end/],
      ['a{2', /not a valid regular expression/],
      ['[z-a]', /not a valid regular expression/],
    ];
    for (const [pattern, message] of unsupported) {
      let error: unknown;
      try {
        compileResponseFormat({ type: 'regex', pattern });
      } catch (e) {
        error = e;
      }
      expect(error, pattern).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).argument).toBe('responseFormat.pattern');
      expect((error as Error).message, pattern).toMatch(message);
    }
  });
});

describe('a format whose DFA would blow up', () => {
  // `.*a.{20}` must remember which of the last 20 characters were `a`: about 2^20 DFA states.
  it('grows only where decoding goes, and stops at maxDfaStates with an InvalidInputError naming the format, as a regex and as a schema pattern', () => {
    for (const [format, argument] of [
      [{ type: 'regex', pattern: '.*a.{20}' }, 'responseFormat.pattern'],
      [{ type: 'json_schema', schema: { type: 'object', properties: { s: { type: 'string', pattern: '^.*a.{20}$' } }, required: ['s'] } }, 'responseFormat.schema'],
    ] as const) {
      const grammar = compileResponseFormat(format, { maxDfaStates: 300 });
      const matcher = grammar.matcher(character.vocabulary);
      // The fewest bytes to the end come from the NFA: asking for them explores no DFA state.
      expect(matcher.minBytesToComplete()).toBeGreaterThanOrEqual(21);
      expect(grammar.dfaStates).toBe(1);
      let error: unknown;
      let seed = 7;
      try {
        // Each step's mask walks the vocabulary from the row's state, adding a few states.
        for (let step = 0; step < 400; step++) {
          matcher.minBytesToComplete();
          const mask = matcher.allowed();
          const ids = [...Array(character.bytes.length).keys()].filter((i) => (mask[i >>> 5] >>> (i & 31)) & 1 && !character.eosIds.includes(i));
          const open = ids.filter((i) => !character.bytes[i].includes(0x22));
          const choices = open.length > 0 ? open : ids;
          // Where the `a`s fall decides the state: a seeded walk writes one half the time (and never closes the string).
          seed = (seed * 1103515245 + 12345) % 2 ** 31;
          const a = choices.find((i) => character.bytes[i].length === 1 && character.bytes[i][0] === 0x61);
          const id = a !== undefined && ((seed >>> 16) & 1) === 0 ? a : choices[(seed >>> 8) % choices.length];
          matcher.accept(id);
        }
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).argument).toBe(argument);
      expect((error as Error).message).toMatch(/needs more than 300 DFA states/);
      expect(grammar.dfaStates).toBe(300);
    }
  });
});
