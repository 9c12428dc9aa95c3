/**
 * JSON Schema → format parts (ir.ts). The output is always a sub-language of the schema: every
 * text the automaton accepts validates, though not every valid text is produced (properties come
 * in the schema's order, no undeclared properties are written, whitespace and number lengths are
 * bounded).
 *
 * Supported: `type` (one or a list), `enum`, `const`, `anyOf`, `oneOf` (branches must not overlap,
 * which is checked), `allOf` with one entry, local `$ref` (`#/$defs/…`, `#/definitions/…`, not
 * recursive); objects: `properties`, `required`, `additionalProperties`; arrays: `items`,
 * `minItems`, `maxItems`; strings: `minLength`, `maxLength`, `pattern`, `format` (string-formats.ts);
 * numbers and integers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (a number, or
 * draft 4's boolean), `multipleOf` (a positive integer). A bounded `number` is written as a decimal
 * of at most 15 digits without exponent, so exclusive bounds hold after parsing (numeric.ts).
 * Annotations (`title`, `description`, `default`, `examples`, …) are ignored. Any other keyword is
 * an `InvalidInputError` naming it: a constraint silently dropped would let invalid output through.
 *
 * Subschemas nest at most `MAX_SCHEMA_DEPTH` levels, and every subschema's automaton size is
 * checked against the state limit as soon as it is known, so the error names the part too large.
 */
import { InvalidInputError } from '../errors.js';
import { alt, EMPTY, size, type Ir } from './ir.js';
import type { JsonBuilder, PropertyRule } from './json-grammar.js';
import { overlaps, type Fragment } from './nfa.js';
import { boundedNumber, boundedNumberSize, noNumberError, type NumberBounds } from './numeric.js';
import { parseRegex } from './regex.js';
import { STRING_FORMATS } from './string-formats.js';

/** Deepest nesting of subschemas (each of properties, items, anyOf / oneOf / allOf and $ref is a level). */
export const MAX_SCHEMA_DEPTH = 64;

const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  '$defs',
  'definitions',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
]);
const COMBINATORS = ['enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref'] as const;
const FAMILIES = {
  object: ['properties', 'required', 'additionalProperties'],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
} as const;
const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
type JsonType = (typeof TYPES)[number];
const SUPPORTED = new Set<string>(['type', ...COMBINATORS, ...Object.values(FAMILIES).flat()]);
/** Pairs of states all of a schema's `oneOf` overlap checks may visit before they give up. */
const OVERLAP_BUDGET = 300_000;

type Schema = Record<string, unknown>;

export class SchemaCompiler {
  private readonly refs: string[] = [];
  private readonly compiledRefs = new Map<string, Ir>();
  private readonly overlapBudget = { left: OVERLAP_BUDGET };

  constructor(
    private readonly json: JsonBuilder,
    private readonly root: unknown,
    private readonly argument: string,
    /** Most automaton states (GrammarOptions.maxStates). */
    private readonly limit: number,
  ) {}

  compile(schema: unknown = this.root, path = '', depth = 0): Ir {
    const where = `${this.argument}${path}`;
    if (depth > MAX_SCHEMA_DEPTH) {
      throw new InvalidInputError(where, `nests subschemas more than ${MAX_SCHEMA_DEPTH} deep (properties, items, anyOf, oneOf and $ref each add a level); flatten the schema.`);
    }
    const ir = this.schema(schema, path, depth);
    const states = size(ir);
    if (states > this.limit) {
      throw new InvalidInputError(
        where,
        `would compile to ${states === Infinity ? 'unboundedly many' : Math.ceil(states)} automaton states, more than the limit of ${this.limit} automaton states (maxStates); lower maxLength / maxItems / repeat counts / multipleOf or the nesting.`,
      );
    }
    return ir;
  }

  private schema(schema: unknown, path: string, depth: number): Ir {
    const where = `${this.argument}${path}`;
    if (schema === true) return this.json.anyValue();
    if (schema === false) throw new InvalidInputError(where, 'is `false`, which no value satisfies.');
    if (!isRecord(schema)) throw new InvalidInputError(where, 'must be a JSON Schema object (or true).');
    for (const key of Object.keys(schema)) {
      if (!SUPPORTED.has(key) && !ANNOTATIONS.has(key)) {
        throw new InvalidInputError(
          `${where}/${key}`,
          `the keyword "${key}" is not supported by constrained decoding; remove it or express it with type, enum, const, anyOf, properties, items, minItems/maxItems, minLength/maxLength, pattern, format, minimum/maximum or multipleOf.`,
        );
      }
    }
    const combinator = COMBINATORS.find((k) => k in schema);
    if (combinator) return this.combinator(schema, combinator, path, depth);
    return alt(...this.types(schema, path).map((type) => this.typed(schema, type, path, depth)));
  }

  /** `enum`, `const`, `anyOf`, … stand alone (with `type` only next to `enum` / `const`). */
  private combinator(schema: Schema, keyword: (typeof COMBINATORS)[number], path: string, depth: number): Ir {
    const where = `${this.argument}${path}`;
    const constraints = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k) && k !== keyword);
    const allowed = keyword === 'enum' || keyword === 'const' ? ['type'] : [];
    const extra = constraints.find((k) => !allowed.includes(k));
    if (extra) throw new InvalidInputError(`${where}/${extra}`, `the keyword "${extra}" next to "${keyword}" is not supported; move it inside the ${keyword} branches.`);
    switch (keyword) {
      case 'enum':
      case 'const': {
        const values = keyword === 'const' ? [schema.const] : schema.enum;
        if (!Array.isArray(values)) throw new InvalidInputError(`${where}/enum`, 'must be an array of values.');
        const types = 'type' in schema ? this.types(schema, path) : undefined;
        const kept = values.filter((v) => types === undefined || types.some((t) => hasType(v, t)));
        if (kept.length === 0) throw new InvalidInputError(`${where}/${keyword}`, 'has no value of the allowed type, so nothing can be generated.');
        const texts = [...new Set(kept.map((v) => JSON.stringify(v)))];
        return alt(...texts.map((text) => this.json.text(text)));
      }
      case 'anyOf':
      case 'oneOf':
      case 'allOf': {
        const branches = schema[keyword];
        if (!Array.isArray(branches) || branches.length === 0) throw new InvalidInputError(`${where}/${keyword}`, 'must be a non-empty array of schemas.');
        if (keyword === 'allOf' && branches.length > 1) {
          throw new InvalidInputError(`${where}/allOf`, 'with more than one schema is not supported (an intersection); merge the schemas into one.');
        }
        const parts = branches.map((branch, i) => this.compile(branch, `${path}/${keyword}/${i}`, depth + 1));
        return keyword === 'oneOf' && parts.length > 1 ? this.exclusive(parts, `${where}/oneOf`) : alt(...parts);
      }
      case '$ref':
        return this.ref(schema.$ref, path, depth);
    }
  }

  /** The branches of a `oneOf`, checked not to overlap once they are built. */
  private exclusive(parts: Ir[], where: string): Ir {
    return {
      kind: 'leaf',
      size: size(alt(...parts)),
      build: (nfa, child) => {
        const built: Fragment[] = parts.map(child);
        for (let i = 0; i < built.length; i++) {
          for (let j = i + 1; j < built.length; j++) {
            const verdict = overlaps(nfa, built[i], built[j], this.overlapBudget);
            if (verdict === 'unknown') throw new InvalidInputError(where, `branches ${i} and ${j} are too large to check for overlap; use anyOf if either may match.`);
            if (verdict) throw new InvalidInputError(where, `branches ${i} and ${j} can match the same value, which oneOf forbids; make them exclusive or use anyOf.`);
          }
        }
        return nfa.alt(built);
      },
    };
  }

  private ref(ref: unknown, path: string, depth: number): Ir {
    const where = `${this.argument}${path}/$ref`;
    if (typeof ref !== 'string' || !ref.startsWith('#')) throw new InvalidInputError(where, 'only local references ("#/$defs/Name") are supported.');
    if (this.refs.includes(ref)) throw new InvalidInputError(where, `"${ref}" refers to itself (a recursive schema), which constrained decoding does not support.`);
    // A definition used in many places is compiled once; the automaton copies it per use.
    const known = this.compiledRefs.get(ref);
    if (known) return known;
    let target: unknown = this.root;
    for (const part of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      target = isRecord(target) ? target[key] : undefined;
    }
    if (target === undefined) throw new InvalidInputError(where, `"${ref}" does not point into the schema.`);
    this.refs.push(ref);
    try {
      const ir = this.compile(target, ref.slice(1), depth + 1);
      this.compiledRefs.set(ref, ir);
      return ir;
    } finally {
      this.refs.pop();
    }
  }

  /** The declared types, or those whose keywords appear, or every type. */
  private types(schema: Schema, path: string): JsonType[] {
    const where = `${this.argument}${path}/type`;
    if ('type' in schema) {
      const list = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (list.length === 0) throw new InvalidInputError(where, 'must name at least one type.');
      for (const t of list) if (!TYPES.includes(t as JsonType)) throw new InvalidInputError(where, `"${String(t)}" is not a JSON Schema type (${TYPES.join(', ')}).`);
      return [...new Set(list as JsonType[])];
    }
    const implied = (Object.keys(FAMILIES) as Array<keyof typeof FAMILIES>).filter((t) => FAMILIES[t].some((k) => k in schema));
    return implied.length > 0 ? implied : [...TYPES];
  }

  private typed(schema: Schema, type: JsonType, path: string, depth: number): Ir {
    switch (type) {
      case 'null':
        return this.json.text('null');
      case 'boolean':
        return alt(this.json.text('true'), this.json.text('false'));
      case 'integer':
      case 'number':
        return this.numeric(schema, type, path);
      case 'string':
        return this.string(schema, path);
      case 'array':
        return this.array(schema, path, depth);
      case 'object':
        return this.object(schema, path, depth);
    }
  }

  private numeric(schema: Schema, type: 'integer' | 'number', path: string): Ir {
    const where = `${this.argument}${path}`;
    if (!FAMILIES.number.some((k) => k in schema)) return type === 'integer' ? this.json.integer() : this.json.number();
    const number = (keyword: string): number | undefined => {
      const value = schema[keyword];
      if (value === undefined) return undefined;
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidInputError(`${where}/${keyword}`, `must be a finite number, got ${JSON.stringify(value)}.`);
      return value;
    };
    // The tighter of an inclusive and an exclusive bound (draft 4's boolean form makes the inclusive one exclusive).
    const bound = (inclusiveKey: string, exclusiveKey: string, tighter: (a: number, b: number) => boolean) => {
      const draft4 = typeof schema[exclusiveKey] === 'boolean';
      const inclusive = number(inclusiveKey);
      const exclusive = draft4 ? undefined : number(exclusiveKey);
      if (draft4 && schema[exclusiveKey] === true) {
        if (inclusive === undefined) throw new InvalidInputError(`${where}/${exclusiveKey}`, `true needs ${inclusiveKey} next to it.`);
        return { value: inclusive, exclusive: true };
      }
      if (exclusive !== undefined && (inclusive === undefined || !tighter(inclusive, exclusive))) return { value: exclusive, exclusive: true };
      return inclusive === undefined ? undefined : { value: inclusive, exclusive: false };
    };
    const lower = bound('minimum', 'exclusiveMinimum', (a, b) => a > b);
    const upper = bound('maximum', 'exclusiveMaximum', (a, b) => a < b);
    const multipleOf = number('multipleOf');
    if (multipleOf !== undefined && !(Number.isSafeInteger(multipleOf) && multipleOf > 0)) {
      throw new InvalidInputError(
        `${where}/multipleOf`,
        `must be a positive integer for constrained decoding, got ${multipleOf} (a fractional step is not exact in binary floating point, so validators disagree on it).`,
      );
    }
    const bounds: NumberBounds = {
      ...(lower ? { minimum: lower.value, exclusiveMinimum: lower.exclusive } : {}),
      ...(upper ? { maximum: upper.value, exclusiveMaximum: upper.exclusive } : {}),
      ...(multipleOf !== undefined ? { multipleOf } : {}),
      fraction: type === 'number',
    };
    const states = boundedNumberSize(bounds);
    if (states > this.limit) {
      throw new InvalidInputError(`${where}/multipleOf`, `${multipleOf} needs about ${states} automaton states, more than the limit of ${this.limit} automaton states (maxStates); use a smaller multipleOf.`);
    }
    const ir = boundedNumber(bounds);
    if (!ir) throw noNumberError(where, bounds);
    return ir;
  }

  private string(schema: Schema, path: string): Ir {
    const where = `${this.argument}${path}`;
    const minLength = this.count(schema, 'minLength', path, 0);
    const maxLength = this.count(schema, 'maxLength', path, Infinity);
    this.ordered(minLength, maxLength, 'minLength', 'maxLength', path);
    const { pattern, format } = schema;
    if (pattern !== undefined && typeof pattern !== 'string') throw new InvalidInputError(`${where}/pattern`, 'must be a string.');
    if (format !== undefined) {
      if (typeof format !== 'string' || !(format in STRING_FORMATS)) {
        throw new InvalidInputError(
          `${where}/format`,
          `${JSON.stringify(format)} is not supported by constrained decoding (${Object.keys(STRING_FORMATS).join(', ')} are); remove it or write a pattern.`,
        );
      }
      if (pattern !== undefined) throw new InvalidInputError(`${where}/format`, 'next to pattern is not supported (the two would intersect); fold the format into the pattern.');
      const node = parseRegex(STRING_FORMATS[format], `${where}/format`);
      return this.json.string({ minLength, maxLength, pattern: { node, mode: 'full' } }, `${where}/format`);
    }
    const node = pattern === undefined ? undefined : parseRegex(pattern, `${where}/pattern`);
    return this.json.string({ minLength, maxLength, ...(node ? { pattern: { node, mode: 'search' as const } } : {}) }, `${where}/pattern`);
  }

  private array(schema: Schema, path: string, depth: number): Ir {
    const minItems = this.count(schema, 'minItems', path, 0);
    const maxItems = this.count(schema, 'maxItems', path, Infinity);
    this.ordered(minItems, maxItems, 'minItems', 'maxItems', path);
    if (schema.uniqueItems !== undefined && schema.uniqueItems !== false) {
      throw new InvalidInputError(`${this.argument}${path}/uniqueItems`, 'the keyword "uniqueItems" (true) is not supported by constrained decoding.');
    }
    const items = schema.items ?? true;
    if (Array.isArray(items)) throw new InvalidInputError(`${this.argument}${path}/items`, 'an array of schemas (a tuple) is not supported; give one schema for every item.');
    if (items === false) return this.json.array(EMPTY, 0, 0);
    return this.json.array(this.compile(items, `${path}/items`, depth + 1), minItems, maxItems);
  }

  private object(schema: Schema, path: string, depth: number): Ir {
    const where = `${this.argument}${path}`;
    const properties = schema.properties ?? {};
    if (!isRecord(properties)) throw new InvalidInputError(`${where}/properties`, 'must be an object of schemas.');
    const required = schema.required ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) throw new InvalidInputError(`${where}/required`, 'must be an array of property names.');
    const additional = schema.additionalProperties ?? true;
    const rules: PropertyRule[] = Object.entries(properties).map(([key, value]) => ({
      key,
      required: required.includes(key),
      value: this.compile(value, `${path}/properties/${key}`, depth + 1),
    }));
    const undeclared = [...new Set(required as string[])].filter((key) => !(key in properties));
    if (undeclared.length > 0) {
      if (additional === false) throw new InvalidInputError(`${where}/required`, `"${undeclared[0]}" is required but not in properties, and additionalProperties is false.`);
      const value = this.compile(additional, `${path}/additionalProperties`, depth + 1);
      for (const key of undeclared) rules.push({ key, required: true, value });
    }
    // Undeclared properties are allowed but never written: fewer keys still validate.
    if (rules.length === 0 && additional !== false && schema.properties === undefined) {
      return this.json.map(this.compile(additional, `${path}/additionalProperties`, depth + 1));
    }
    return this.json.object(rules);
  }

  private count(schema: Schema, keyword: string, path: string, fallback: number): number {
    const value = schema[keyword];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      throw new InvalidInputError(`${this.argument}${path}/${keyword}`, `must be a non-negative integer, got ${JSON.stringify(value)}.`);
    }
    return value;
  }

  private ordered(min: number, max: number, minName: string, maxName: string, path: string): void {
    if (min > max) throw new InvalidInputError(`${this.argument}${path}/${minName}`, `${minName} ${min} is above ${maxName} ${max}, so nothing can be generated.`);
  }
}

function hasType(value: unknown, type: JsonType): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isRecord(value);
    default:
      return typeof value === type;
  }
}

function isRecord(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
