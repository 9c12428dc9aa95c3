import fc from 'fast-check';

const PATTERNS = ['^[a-z]+$', '^G[0-9]{1,3}$', 'a|b', '^(yes|no|maybe)$', '[0-9]', '^\\w{2,5}$', '^[^"\\\\]*x$', '^\\d{3}-\\d{4}$'];
const UNICODE_PATTERNS = ['^[à-ÿ]{1,3}$', 'é|中', '^.{2}$'];

/** Random schemas: objects, arrays, enums, constants, string bounds and patterns, anyOf, nested. */
export function schemaArbitrary(unicode: boolean): fc.Arbitrary<Record<string, unknown>> {
  const text = unicode ? fc.string({ unit: 'grapheme', maxLength: 6 }) : fc.string({ maxLength: 6 });
  const primitive = fc.oneof(text, fc.integer({ min: -1000, max: 1000 }), fc.boolean(), fc.constant(null), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }));
  const bounds = fc.tuple(fc.nat(4), fc.option(fc.nat(8), { nil: undefined })).map(([min, extra]) => ({
    minLength: min,
    ...(extra === undefined ? {} : { maxLength: min + extra }),
  }));
  const patterns = unicode ? [...PATTERNS, ...UNICODE_PATTERNS] : PATTERNS;
  const leaf = fc.oneof(
    fc.constantFrom({ type: 'integer' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }, { type: 'string' }, { type: ['string', 'null'] }),
    bounds.map((b) => ({ type: 'string', ...b })),
    fc.tuple(fc.constantFrom(...patterns), fc.option(fc.nat(6), { nil: undefined })).map(([pattern, max]) => ({
      type: 'string',
      pattern,
      ...(max === undefined ? {} : { maxLength: max + 8 }),
    })),
    fc.uniqueArray(primitive, { minLength: 1, maxLength: 4, selector: (v) => JSON.stringify(v) }).map((values) => ({ enum: values })),
    primitive.map((value) => ({ const: value, description: 'a constant' })),
  );
  type Tree = { schema: Record<string, unknown>; object: Record<string, unknown>; array: Record<string, unknown>; anyOf: Record<string, unknown> };
  const { schema } = fc.letrec<Tree>((tie) => ({
    schema: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf as fc.Arbitrary<Record<string, unknown>>, tie('object'), tie('array'), tie('anyOf')),
    object: fc
      .dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/), tie('schema'), { maxKeys: 4 })
      .chain((properties) =>
        fc.record({
          type: fc.constant('object'),
          properties: fc.constant(properties),
          required: fc.subarray(Object.keys(properties)),
          additionalProperties: fc.constantFrom(false, undefined),
        }),
      ),
    array: fc.tuple(tie('schema'), fc.nat(2), fc.option(fc.nat(3), { nil: undefined })).map(([items, min, extra]) => ({
      type: 'array',
      items,
      minItems: min,
      ...(extra === undefined ? {} : { maxItems: min + extra }),
    })),
    anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
  }));
  return schema.map((s) => JSON.parse(JSON.stringify(s)) as Record<string, unknown>);
}
