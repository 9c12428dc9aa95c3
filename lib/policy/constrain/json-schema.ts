/**
 * JSON Schema → byte automaton. The output is always a sub-language of the schema: every text the
 * automaton accepts validates, though not every valid text is produced (properties come in the
 * schema's order, no undeclared properties are written, whitespace and number lengths are bounded).
 *
 * Supported: `type` (one or a list), `enum`, `const`, `anyOf`, `oneOf` (branches must not overlap,
 * which is checked), `allOf` with one entry, local `$ref` (`#/$defs/…`, `#/definitions/…`, not
 * recursive); objects: `properties`, `required`, `additionalProperties`; arrays: `items`,
 * `minItems`, `maxItems`; strings: `minLength`, `maxLength`, `pattern`. Annotations (`title`,
 * `description`, `default`, `examples`, …) are ignored. Any other keyword is an `InvalidInputError`
 * naming it: a constraint silently dropped would let invalid output through.
 */
import { InvalidInputError } from '../../errors.js';
import type { JsonBuilder, PropertyRule } from './json-grammar.js';
import { overlaps, type Fragment } from './nfa.js';

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
  string: ['minLength', 'maxLength', 'pattern'],
} as const;
const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
type JsonType = (typeof TYPES)[number];
const SUPPORTED = new Set<string>(['type', ...COMBINATORS, ...Object.values(FAMILIES).flat()]);
/** Pairs of states a `oneOf` overlap check may visit before it gives up. */
const OVERLAP_BUDGET = 2_000_000;

type Schema = Record<string, unknown>;

export class SchemaCompiler {
  private readonly refs: string[] = [];

  constructor(
    private readonly json: JsonBuilder,
    private readonly root: unknown,
    private readonly argument: string,
  ) {}

  compile(schema: unknown = this.root, path = ''): Fragment {
    const where = `${this.argument}${path}`;
    if (schema === true) return this.json.anyValue();
    if (schema === false) throw new InvalidInputError(where, 'is `false`, which no value satisfies.');
    if (!isRecord(schema)) throw new InvalidInputError(where, 'must be a JSON Schema object (or true).');
    for (const key of Object.keys(schema)) {
      if (!SUPPORTED.has(key) && !ANNOTATIONS.has(key)) {
        throw new InvalidInputError(`${where}/${key}`, `the keyword "${key}" is not supported by constrained decoding; remove it or express it with type, enum, const, anyOf, properties, items, minItems/maxItems, minLength/maxLength or pattern.`);
      }
    }
    const combinator = COMBINATORS.find((k) => k in schema);
    if (combinator) return this.combinator(schema, combinator, path);
    return this.json.nfa.alt(this.types(schema, path).map((type) => this.typed(schema, type, path)));
  }

  /** `enum`, `const`, `anyOf`, … stand alone (with `type` only next to `enum` / `const`). */
  private combinator(schema: Schema, keyword: (typeof COMBINATORS)[number], path: string): Fragment {
    const where = `${this.argument}${path}`;
    const constraints = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k) && k !== keyword);
    const allowed = keyword === 'enum' || keyword === 'const' ? ['type'] : [];
    const extra = constraints.find((k) => !allowed.includes(k));
    if (extra) throw new InvalidInputError(`${where}/${extra}`, `the keyword "${extra}" next to "${keyword}" is not supported; move it inside the ${keyword} branches.`);
    const n = this.json.nfa;
    switch (keyword) {
      case 'enum':
      case 'const': {
        const values = keyword === 'const' ? [schema.const] : schema.enum;
        if (!Array.isArray(values)) throw new InvalidInputError(`${where}/enum`, 'must be an array of values.');
        const types = 'type' in schema ? this.types(schema, path) : undefined;
        const kept = values.filter((v) => types === undefined || types.some((t) => hasType(v, t)));
        if (kept.length === 0) throw new InvalidInputError(`${where}/${keyword}`, 'has no value of the allowed type, so nothing can be generated.');
        const texts = [...new Set(kept.map((v) => JSON.stringify(v)))];
        return n.alt(texts.map((text) => this.json.text(text)));
      }
      case 'anyOf':
      case 'oneOf':
      case 'allOf': {
        const branches = schema[keyword];
        if (!Array.isArray(branches) || branches.length === 0) throw new InvalidInputError(`${where}/${keyword}`, 'must be a non-empty array of schemas.');
        if (keyword === 'allOf' && branches.length > 1) {
          throw new InvalidInputError(`${where}/allOf`, 'with more than one schema is not supported (an intersection); merge the schemas into one.');
        }
        const parts = branches.map((branch, i) => this.compile(branch, `${path}/${keyword}/${i}`));
        if (keyword === 'oneOf') this.checkExclusive(parts, `${where}/oneOf`);
        return n.alt(parts);
      }
      case '$ref':
        return this.ref(schema.$ref, path);
    }
  }

  private checkExclusive(parts: Fragment[], where: string): void {
    for (let i = 0; i < parts.length; i++) {
      for (let j = i + 1; j < parts.length; j++) {
        const verdict = overlaps(this.json.nfa, parts[i], parts[j], OVERLAP_BUDGET);
        if (verdict === 'unknown') throw new InvalidInputError(where, `branches ${i} and ${j} are too large to check for overlap; use anyOf if either may match.`);
        if (verdict) throw new InvalidInputError(where, `branches ${i} and ${j} can match the same value, which oneOf forbids; make them exclusive or use anyOf.`);
      }
    }
  }

  private ref(ref: unknown, path: string): Fragment {
    const where = `${this.argument}${path}/$ref`;
    if (typeof ref !== 'string' || !ref.startsWith('#')) throw new InvalidInputError(where, 'only local references ("#/$defs/Name") are supported.');
    if (this.refs.includes(ref)) throw new InvalidInputError(where, `"${ref}" refers to itself (a recursive schema), which constrained decoding does not support.`);
    let target: unknown = this.root;
    for (const part of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      target = isRecord(target) ? target[key] : undefined;
    }
    if (target === undefined) throw new InvalidInputError(where, `"${ref}" does not point into the schema.`);
    this.refs.push(ref);
    try {
      return this.compile(target, ref.slice(1));
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

  private typed(schema: Schema, type: JsonType, path: string): Fragment {
    switch (type) {
      case 'null':
        return this.json.text('null');
      case 'boolean':
        return this.json.nfa.alt([this.json.text('true'), this.json.text('false')]);
      case 'integer':
        return this.json.integer();
      case 'number':
        return this.json.number();
      case 'string': {
        const minLength = this.count(schema, 'minLength', path, 0);
        const maxLength = this.count(schema, 'maxLength', path, Infinity);
        this.ordered(minLength, maxLength, 'minLength', 'maxLength', path);
        const pattern = schema.pattern;
        if (pattern !== undefined && typeof pattern !== 'string') throw new InvalidInputError(`${this.argument}${path}/pattern`, 'must be a string.');
        return this.json.string({ minLength, maxLength, pattern }, `${this.argument}${path}/pattern`);
      }
      case 'array':
        return this.array(schema, path);
      case 'object':
        return this.object(schema, path);
    }
  }

  private array(schema: Schema, path: string): Fragment {
    const minItems = this.count(schema, 'minItems', path, 0);
    const maxItems = this.count(schema, 'maxItems', path, Infinity);
    this.ordered(minItems, maxItems, 'minItems', 'maxItems', path);
    if (schema.uniqueItems !== undefined && schema.uniqueItems !== false) {
      throw new InvalidInputError(`${this.argument}${path}/uniqueItems`, 'the keyword "uniqueItems" (true) is not supported by constrained decoding.');
    }
    const items = schema.items ?? true;
    if (Array.isArray(items)) throw new InvalidInputError(`${this.argument}${path}/items`, 'an array of schemas (a tuple) is not supported; give one schema for every item.');
    if (items === false) return this.json.array(() => this.json.nfa.empty(), 0, 0);
    return this.json.array(() => this.compile(items, `${path}/items`), minItems, maxItems);
  }

  private object(schema: Schema, path: string): Fragment {
    const where = `${this.argument}${path}`;
    const properties = schema.properties ?? {};
    if (!isRecord(properties)) throw new InvalidInputError(`${where}/properties`, 'must be an object of schemas.');
    const required = schema.required ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) throw new InvalidInputError(`${where}/required`, 'must be an array of property names.');
    const additional = schema.additionalProperties ?? true;
    const rules: PropertyRule[] = Object.entries(properties).map(([key, value]) => ({
      key,
      required: required.includes(key),
      value: () => this.compile(value, `${path}/properties/${key}`),
    }));
    for (const key of new Set(required as string[])) {
      if (key in properties) continue;
      if (additional === false) throw new InvalidInputError(`${where}/required`, `"${key}" is required but not in properties, and additionalProperties is false.`);
      rules.push({ key, required: true, value: () => this.compile(additional, `${path}/additionalProperties`) });
    }
    // Undeclared properties are allowed but never written: fewer keys still validate.
    if (rules.length === 0 && additional !== false && schema.properties === undefined) {
      return this.json.map(() => this.compile(additional, `${path}/additionalProperties`));
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
