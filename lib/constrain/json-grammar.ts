/**
 * JSON's building blocks as format parts (ir.ts): bounded whitespace, numbers, strings (any,
 * counted, or patterned), literals, arrays, objects with named properties, free-form values.
 *
 * Two bounds keep every output finite where JSON itself is not: a run of whitespace between
 * tokens is at most `maxWhitespace` characters (a model cannot loop on spaces), and numbers have at
 * most 15 integer digits, 15 fraction digits and a two-digit exponent (so they always parse to a
 * finite double, and integers stay exact). Free-form values (`{}`, `json_object`) nest at most
 * `maxDepth` levels: a regular language needs a bound, and each level doubles the automaton.
 */
import { ANY_CHAR } from './charset.js';
import { countChars, countedSize, encodedExtra, lowerChars } from './encode.js';
import { alt, list, optional, repeat, seq, size, type Ir } from './ir.js';
import { Nfa, type Fragment } from './nfa.js';
import { regexChars, regexSize, type RegexMode, type RegexNode } from './regex.js';

export interface JsonBounds {
  maxWhitespace: number;
  maxDepth: number;
}

/** A string's characters: a length range, and a parsed pattern they match (anywhere, or in full). */
export interface StringBounds {
  minLength: number;
  maxLength: number;
  pattern?: { node: RegexNode; mode: RegexMode };
}

export interface PropertyRule {
  key: string;
  required: boolean;
  value: Ir;
}

const utf8 = new TextEncoder();
const WHITESPACE = ' \t\n\r';
const MAX_INTEGER_DIGITS = 15;
const MAX_FRACTION_DIGITS = 15;
const MAX_EXPONENT_DIGITS = 2;
const DIGIT: Ir = { kind: 'bytes', ranges: [[0x30, 0x39]] };

export class JsonBuilder {
  private readonly whitespace: Ir;
  private readonly values = new Map<number, Ir>();

  constructor(
    readonly bounds: JsonBounds,
    /** Most states of the character automaton of one string (its own limit). */
    readonly limit: number,
    /** What an error in a free-form string (a key of `json_object`) names. */
    readonly argument: string,
  ) {
    this.whitespace = repeat(this.oneOf(WHITESPACE), 0, bounds.maxWhitespace);
  }

  /** The bytes of `text` (UTF-8), in order. */
  text(text: string): Ir {
    return { kind: 'text', bytes: utf8.encode(text) };
  }

  /** One byte out of the characters of `chars` (ASCII). */
  oneOf(chars: string): Ir {
    return { kind: 'bytes', ranges: Array.from(chars, (c) => [c.charCodeAt(0), c.charCodeAt(0)] as const) };
  }

  ws(): Ir {
    return this.whitespace;
  }

  /** The JSON text of a constant, compact (`JSON.stringify`). */
  constant(value: unknown): Ir {
    return this.text(JSON.stringify(value));
  }

  integer(): Ir {
    const magnitude = alt(this.text('0'), seq({ kind: 'bytes', ranges: [[0x31, 0x39]] }, repeat(DIGIT, 0, MAX_INTEGER_DIGITS - 1)));
    return seq(optional(this.text('-')), magnitude);
  }

  number(): Ir {
    const fraction = optional(seq(this.text('.'), repeat(DIGIT, 1, MAX_FRACTION_DIGITS)));
    const exponent = optional(seq(this.oneOf('eE'), optional(this.oneOf('+-')), repeat(DIGIT, 1, MAX_EXPONENT_DIGITS)));
    return seq(this.integer(), fraction, exponent);
  }

  /**
   * A string literal whose decoded text has `minLength..maxLength` characters and matches the
   * pattern. Its character automaton is built once, then encoded into bytes for every copy.
   */
  string(bounds: StringBounds, argument: string): Ir {
    const { minLength, maxLength, pattern } = bounds;
    const counted = minLength > 0 || maxLength < Infinity;
    const copies = maxLength === Infinity ? minLength + 1 : maxLength + 1;
    let size: number;
    let chars: () => { nfa: Nfa; frag: Fragment };
    if (!pattern) {
      size = (2 + encodedExtra(ANY_CHAR, 'json')) * copies + 2;
      chars = () => {
        const nfa = new Nfa(this.limit, argument);
        return { nfa, frag: nfa.repeat(() => nfa.ranges(ANY_CHAR), minLength, maxLength) };
      };
    } else {
      const alone = regexSize(pattern.node, pattern.mode, (set) => encodedExtra(set, 'json'));
      const build = () => regexChars(pattern.node, argument, pattern.mode, this.limit);
      if (!counted) {
        size = alone.states + alone.extra;
        chars = build;
      } else if (alone.states > this.limit) {
        // Refused by its size before anything is built.
        size = (alone.states + alone.extra) * copies;
        chars = () => {
          const built = build();
          return countChars(built.nfa, built.frag, minLength, maxLength);
        };
      } else {
        // The pattern alone is small enough to build now; counting it is then sized exactly.
        const built = build();
        const product = countedSize(built.nfa, built.frag, minLength, maxLength, 'json', this.limit);
        size = product.states + product.extra;
        chars = () => countChars(built.nfa, built.frag, minLength, maxLength);
      }
    }
    let cached: { nfa: Nfa; frag: Fragment } | undefined;
    const quote = this.text('"');
    const body: Ir = {
      kind: 'leaf',
      size,
      build: (nfa) => {
        cached ??= chars();
        return lowerChars(cached.nfa, cached.frag, nfa, 'json');
      },
    };
    return seq(quote, body, quote);
  }

  array(item: Ir, minItems: number, maxItems: number): Ir {
    const sep = seq(this.ws(), this.text(','), this.ws());
    return seq(this.text('['), this.ws(), list(item, sep, minItems, maxItems), this.ws(), this.text(']'));
  }

  /**
   * An object with the given properties in the given order, the optional ones present or not.
   * Two chains of states, "nothing written yet" and "something written", decide whether a comma
   * comes before the next property; each property's value is built once.
   */
  object(properties: PropertyRule[]): Ir {
    const open = seq(this.text('{'), this.ws());
    const close = seq(this.ws(), this.text('}'));
    const comma = seq(this.ws(), this.text(','), this.ws());
    const pairs = properties.map((p) => seq(this.constant(p.key), this.ws(), this.text(':'), this.ws(), p.value));
    const total = pairs.reduce((sum, pair) => sum + size(pair) + size(comma) + 3, size(open) + size(close) + 1);
    return {
      kind: 'leaf',
      size: total,
      build: (n, child) => {
        const start = child(open);
        let none = start.end;
        let some = n.state();
        properties.forEach((property, i) => {
          const before = n.state();
          n.epsilon(none, before);
          const c = child(comma);
          n.epsilon(some, c.start);
          n.epsilon(c.end, before);
          const pair = child(pairs[i]);
          n.epsilon(before, pair.start);
          const nextNone = n.state();
          const nextSome = n.state();
          n.epsilon(pair.end, nextSome);
          if (!property.required) {
            n.epsilon(none, nextNone);
            n.epsilon(some, nextSome);
          }
          none = nextNone;
          some = nextSome;
        });
        const end = child(close);
        n.epsilon(none, end.start);
        n.epsilon(some, end.start);
        return { start: start.start, end: end.end };
      },
    };
  }

  /** An object with any keys, each value `value`. */
  map(value: Ir): Ir {
    const pair = seq(this.string({ minLength: 0, maxLength: Infinity }, this.argument), this.ws(), this.text(':'), this.ws(), value);
    const sep = seq(this.ws(), this.text(','), this.ws());
    return seq(this.text('{'), this.ws(), list(pair, sep, 0, Infinity), this.ws(), this.text('}'));
  }

  /** Any JSON value nested at most `depth` more levels. */
  anyValue(depth: number = this.bounds.maxDepth): Ir {
    let value = this.values.get(depth);
    if (value) return value;
    const parts = [this.text('null'), this.text('true'), this.text('false'), this.number(), this.string({ minLength: 0, maxLength: Infinity }, this.argument)];
    if (depth > 0) {
      const inner = this.anyValue(depth - 1);
      parts.push(this.array(inner, 0, Infinity), this.map(inner));
    }
    value = alt(...parts);
    this.values.set(depth, value);
    return value;
  }
}
