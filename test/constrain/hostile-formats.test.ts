/**
 * Hostile formats against the compiler's budgets: generated patterns (counted repeats of
 * thousands after open-ended parts, `.*a.{n}`, alternations that overlap) and schemas (long
 * strings, wide and long arrays) either compile or are refused with an InvalidInputError naming a
 * budget, and no single call (compiling, the first masks, the fewest bytes to completion) holds
 * the thread for long: the time a synchronous call takes is the pause it gives a server's event
 * loop. Old behaviour: `.*a.{20}`'s fewest-bytes search explored the DFA for seconds, and
 * `[\s\S]{4096}` never came back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { compileResponseFormat } from '../../lib/constrain/format.js';
import type { ResponseFormat } from '../../lib/core/policy.js';
import { characterVocabulary } from '../fixtures/vocabularies.js';

const character = characterVocabulary();
/** The compile budget given to every format, as `serve` gives one (its default is 75 ms). */
const BUDGET_MS = 40;
/**
 * What a call may take beyond the budget: the clock is read every 1024 states, and the 2-core
 * test machine is shared. Far below the seconds (or the hang) these formats took before.
 */
const SLACK_MS = 400;

const atom = fc.constantFrom('.', 'a', '[ab]', '[\\s\\S]', '\\w', '(a|b|ab|ba)', '[^"]', '[a-z]');
const count = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1000, max: 6000 }));
const piece = fc.oneof(
  atom,
  fc.tuple(atom, fc.constantFrom('*', '+', '?')).map(([a, q]) => a + q),
  fc.tuple(atom, count).map(([a, n]) => `${a}{${n}}`),
  fc.tuple(atom, count, count).map(([a, m, n]) => `${a}{${Math.min(m, n)},${Math.max(m, n)}}`),
);
const pattern = fc.oneof(
  fc.array(piece, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')),
  fc.tuple(piece, piece).map(([a, b]) => `(${a}|${b})*c${b}`),
  fc.integer({ min: 4, max: 60 }).map((n) => `.*a.{${n}}`),
);
const format: fc.Arbitrary<ResponseFormat> = fc.oneof(
  pattern.map((p) => ({ type: 'regex', pattern: p }) as ResponseFormat),
  pattern.map((p) => ({ type: 'json_schema', schema: { type: 'string', pattern: p } }) as ResponseFormat),
  fc.tuple(pattern, fc.integer({ min: 0, max: 20_000 })).map(([p, n]) => ({ type: 'json_schema', schema: { type: 'string', pattern: p, maxLength: n } }) as ResponseFormat),
  fc.tuple(fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 1, max: 40 })).map(
    ([items, width]) =>
      ({
        type: 'json_schema',
        schema: { type: 'array', maxItems: items, items: { type: 'object', properties: Object.fromEntries(Array.from({ length: width }, (_, i) => [`k${i}`, { type: 'string', maxLength: 30 }])) } },
      }) as ResponseFormat,
  ),
);

/**
 * Runs `call` and returns how long it held the thread, and what it threw (if anything): the CPU
 * time it used, which is the pause it gives an event loop on a machine with a core to spare. On a
 * shared, loaded test machine the wall clock also counts the time other processes held the core,
 * which no code of ours can shorten (at a load of 20 on 2 cores this property failed on wall time).
 */
function timed(call: () => void): { ms: number; error?: unknown } {
  const started = process.cpuUsage();
  const ms = () => {
    const { user, system } = process.cpuUsage(started);
    return (user + system) / 1000;
  };
  try {
    call();
    return { ms: ms() };
  } catch (error) {
    return { ms: ms(), error };
  }
}

function expectBudgetError(error: unknown, what: string): void {
  expect(error, what).toBeInstanceOf(InvalidInputError);
  // Every refusal names what ran out: the states, the compile time, the DFA, or the input itself.
  expect((error as Error).message, what).toMatch(/automaton states|compile budget|DFA states|not supported|no output|overlap|valid regular expression|No token/);
}

describe('hostile formats hold the compile budget', () => {
  it('generated patterns and schemas compile, or are refused naming a budget, without holding the thread', () => {
    let worst = 0;
    fc.assert(
      fc.property(format, (f) => {
        const what = JSON.stringify(f).slice(0, 200);
        let grammar: ReturnType<typeof compileResponseFormat> | undefined;
        const compile = timed(() => {
          grammar = compileResponseFormat(f, { maxCompileMs: BUDGET_MS });
        });
        worst = Math.max(worst, compile.ms);
        expect(compile.ms, what).toBeLessThan(BUDGET_MS + SLACK_MS);
        if (compile.error !== undefined) return expectBudgetError(compile.error, what);
        // The first steps of decoding: each call is one pause too.
        const matcher = grammar!.matcher(character.vocabulary);
        for (let step = 0; step < 3; step++) {
          let id = -1;
          const call = timed(() => {
            matcher.minBytesToComplete();
            const mask = matcher.allowed();
            for (let i = 0; i < character.bytes.length && id < 0; i++) if ((mask[i >>> 5] >>> (i & 31)) & 1 && !character.eosIds.includes(i)) id = i;
          });
          worst = Math.max(worst, call.ms);
          expect(call.ms, what).toBeLessThan(BUDGET_MS + SLACK_MS);
          if (call.error !== undefined) return expectBudgetError(call.error, what);
          if (id < 0) return;
          matcher.accept(id);
        }
      }),
      { numRuns: 60, seed: 42 },
    );
    expect(worst).toBeGreaterThan(0);
  });

  it.each([
    ['.*a.{12}', 13],
    ['.*a.{20}', 21],
    ['.*a.{40}', 41],
    ['[ab]*a[ab]{18}', 19],
    ['(a|b|ab|ba)*c.{15}', 16],
  ] as const)('%s as a schema pattern: the fewest bytes to completion, without exploring the DFA', (p, shortest) => {
    const grammar = compileResponseFormat({ type: 'json_schema', schema: { type: 'string', pattern: p } });
    const matcher = grammar.matcher(character.vocabulary);
    // Exact: both quotes around the shortest match.
    expect(matcher.minBytesToComplete()).toBe(shortest + 2);
    expect(grammar.dfaStates).toBe(1);
  });

  it('[\\s\\S]{4096}: compiles within the budget or is refused naming it, never a hang', () => {
    const { ms, error } = timed(() => compileResponseFormat({ type: 'json_schema', schema: { type: 'string', pattern: '[\\s\\S]{4096}' } }, { maxCompileMs: BUDGET_MS }));
    expect(ms).toBeLessThan(BUDGET_MS + SLACK_MS);
    if (error !== undefined) expect((error as Error).message).toMatch(/more than the compile budget of 40 ms \(maxCompileMs;/);
  });

  it('a format compiled once is kept: the same schema again costs no compile', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', maxLength: 300 } } };
    const first = compileResponseFormat({ type: 'json_schema', schema });
    // A fresh but equal object (the next request's) gets the same grammar.
    expect(compileResponseFormat({ type: 'json_schema', schema: structuredClone(schema) })).toBe(first);
    // The budget decides only whether it compiles; an equal format under a tighter one is served.
    expect(compileResponseFormat({ type: 'json_schema', schema }, { maxCompileMs: 1 })).toBe(first);
    // A format changed since is compiled afresh.
    expect(compileResponseFormat({ type: 'json_schema', schema: { ...schema, required: ['a'] } })).not.toBe(first);
  });
});
