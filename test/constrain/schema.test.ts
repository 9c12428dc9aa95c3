import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, type JsonSchema } from '../../lib/index.js';
import { compileResponseFormat } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { characterVocabulary, syntheticByteBpe, type TestVocabulary } from '../fixtures/vocabularies.js';
import { schemaArbitrary } from './schemas.js';
import { randomWalk } from './walk.js';

const ajv = new Ajv({ strict: false });
const vocabularies: Array<[string, TestVocabulary]> = [
  ['character vocabulary', characterVocabulary()],
  ['byte-level BPE vocabulary', syntheticByteBpe(3000)],
];

function expectInvalid(fn: () => unknown, argument: string, message?: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    const e = error as InvalidInputError;
    expect(e.argument).toBe(argument);
    if (message) expect(e.message).toMatch(message);
    return;
  }
  throw new Error(`expected an InvalidInputError for ${argument}`);
}

describe.each(vocabularies)('random schemas, random walks over the %s', (name, tv) => {
  const unicode = name.startsWith('byte');
  it('every completion parses and validates against its schema, with no dead end', () => {
    fc.assert(
      fc.property(schemaArbitrary(unicode), fc.integer(), (schema, seed) => {
        const grammar = compileResponseFormat({ type: 'json_schema', schema });
        const validate = ajv.compile(schema);
        const rng = mulberry32(seed);
        for (let walk = 0; walk < 3; walk++) {
          const { text, finished } = randomWalk(grammar, tv, rng);
          expect(finished).toBe(true);
          const value: unknown = JSON.parse(text);
          if (!validate(value)) throw new Error(`${text} does not validate against ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
        }
      }),
      { numRuns: 120, seed: 1904 },
    );
  });

  it('json_object: every completion is a JSON object', () => {
    const grammar = compileResponseFormat({ type: 'json_object' });
    const rng = mulberry32(11);
    for (let walk = 0; walk < 40; walk++) {
      const { text, finished } = randomWalk(grammar, tv, rng);
      expect(finished).toBe(true);
      const value: unknown = JSON.parse(text);
      expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    }
  });
});

describe('schema features', () => {
  const tv = vocabularies[1][1];

  it('follows local $refs and counts string length in characters, escapes included', () => {
    const schema: JsonSchema = {
      $defs: { word: { type: 'string', minLength: 2, maxLength: 3 } },
      type: 'object',
      properties: { a: { $ref: '#/$defs/word' }, b: { type: 'array', items: { $ref: '#/$defs/word' }, minItems: 1, maxItems: 2 } },
      required: ['a', 'b'],
      additionalProperties: false,
    };
    const validate = ajv.compile(schema);
    const grammar = compileResponseFormat({ type: 'json_schema', schema });
    const rng = mulberry32(3);
    for (let i = 0; i < 50; i++) {
      const { text } = randomWalk(grammar, tv, rng);
      expect(validate(JSON.parse(text))).toBe(true);
    }
  });

  it('accepts exactly what it should, byte by byte', () => {
    const grammar = compileResponseFormat({
      type: 'json_schema',
      schema: { type: 'object', properties: { n: { type: 'integer' }, s: { type: 'string', maxLength: 2 } }, required: ['n'], additionalProperties: false },
    });
    const accepts = (text: string) => {
      const m = grammar.matcher(tv.vocabulary);
      try {
        for (const b of new TextEncoder().encode(text)) m.accept(5 + b);
      } catch {
        return false;
      }
      return m.isComplete();
    };
    expect(accepts('{"n":12}')).toBe(true);
    expect(accepts('{ "n" : -3 , "s" : "\\"é" }')).toBe(true);
    expect(accepts('{"n":1,"s":"abc"}')).toBe(false);
    expect(accepts('{"s":"a"}')).toBe(false);
    expect(accepts('{"n":1.5}')).toBe(false);
    expect(accepts('{"n":01}')).toBe(false);
    expect(accepts('{"n":1,}')).toBe(false);
    expect(accepts('{"n":1')).toBe(false);
    // Whitespace runs are bounded (4 by default), so a model cannot loop on spaces.
    expect(accepts('{    "n":1}')).toBe(true);
    expect(accepts('{     "n":1}')).toBe(false);
  });

  it('checks that oneOf branches are exclusive', () => {
    const tvc = vocabularies[0][1];
    const grammar = compileResponseFormat({ type: 'json_schema', schema: { oneOf: [{ type: 'integer' }, { type: 'string' }, { type: 'null' }] } });
    const validate = ajv.compile({ oneOf: [{ type: 'integer' }, { type: 'string' }, { type: 'null' }] });
    const rng = mulberry32(5);
    for (let i = 0; i < 30; i++) expect(validate(JSON.parse(randomWalk(grammar, tvc, rng).text))).toBe(true);
    expectInvalid(() => compileResponseFormat({ type: 'json_schema', schema: { oneOf: [{ type: 'integer' }, { type: 'number' }] } }), 'responseFormat.schema/oneOf', /same value/);
    expectInvalid(
      () => compileResponseFormat({ type: 'json_schema', schema: { oneOf: [{ type: 'string' }, { type: 'string', maxLength: 3 }] } }),
      'responseFormat.schema/oneOf',
    );
  });

  it('rejects unsupported keywords by name, never ignoring them', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'number', minimum: '0' }, 'responseFormat.schema/minimum'],
      [{ type: 'string', format: 'hostname' }, 'responseFormat.schema/format'],
      [{ type: 'string', format: 'date', pattern: '^2' }, 'responseFormat.schema/format'],
      [{ type: 'object', properties: { a: { type: 'number', multipleOf: 0.5 } } }, 'responseFormat.schema/properties/a/multipleOf'],
      [{ type: 'integer', minimum: 10, exclusiveMaximum: 10 }, 'responseFormat.schema'],
      [{ type: 'integer', minimum: 1e16 }, 'responseFormat.schema'],
      [{ type: 'object', patternProperties: { '^x': {} } }, 'responseFormat.schema/patternProperties'],
      [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, 'responseFormat.schema/uniqueItems'],
      [{ type: 'array', prefixItems: [{ type: 'string' }] }, 'responseFormat.schema/prefixItems'],
      [{ type: 'object', minProperties: 1 }, 'responseFormat.schema/minProperties'],
      [{ not: { type: 'null' } }, 'responseFormat.schema/not'],
      [{ allOf: [{ type: 'string' }, { maxLength: 2 }] }, 'responseFormat.schema/allOf'],
      [{ $ref: '#' }, 'responseFormat.schema/$ref'],
      [{ $defs: { n: { type: 'array', items: { $ref: '#/$defs/n' } } }, $ref: '#/$defs/n' }, 'responseFormat.schema/$defs/n/items/$ref'],
      [{ type: 'string', pattern: '(a)\\1' }, 'responseFormat.schema/pattern'],
      [{ type: 'string', pattern: '(?=a)b' }, 'responseFormat.schema/pattern'],
      [{ type: 'string', minLength: 3, maxLength: 2 }, 'responseFormat.schema/minLength'],
      [{ enum: [] }, 'responseFormat.schema/enum'],
      [{ type: 'uuid' }, 'responseFormat.schema/type'],
    ];
    for (const [schema, argument] of cases) {
      expectInvalid(() => compileResponseFormat({ type: 'json_schema', schema }), argument);
    }
    const error = (() => {
      try {
        compileResponseFormat({ type: 'json_schema', schema: { type: 'number', not: { const: 0 } } });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toMatch(/"not" is not supported/);
  });

  it('refuses a schema that compiles past the state limit, with the limit in the message', () => {
    const schema = { type: 'array', items: { type: 'array', items: { type: 'string', maxLength: 500 }, maxItems: 50 }, maxItems: 50 };
    // The size is known before anything is built, and the error names the part too large.
    expectInvalid(() => compileResponseFormat({ type: 'json_schema', schema }, { maxStates: 100_000 }), 'responseFormat.schema/items', /100000 automaton states \(maxStates\)/);
  });
});
