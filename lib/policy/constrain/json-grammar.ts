/**
 * JSON's building blocks as byte-automaton fragments: bounded whitespace, numbers, strings (any,
 * counted, or patterned), literals, arrays, objects with named properties, free-form values.
 *
 * Two bounds keep every output finite where JSON itself is not: a run of whitespace between
 * tokens is at most `maxWhitespace` characters (a model cannot loop on spaces), and numbers have at
 * most 15 integer digits, 15 fraction digits and a two-digit exponent (so they always parse to a
 * finite double, and integers stay exact). Free-form values (`{}`, `json_object`) nest at most
 * `maxDepth` levels: a regular language needs a bound, and each level doubles the automaton.
 */
import { ANY_CHAR } from './charset.js';
import { countChars, lowerChars } from './encode.js';
import { Nfa, type Fragment, type Make } from './nfa.js';
import { regexChars } from './regex.js';

export interface JsonBounds {
  maxWhitespace: number;
  maxDepth: number;
}

export interface StringBounds {
  minLength: number;
  maxLength: number;
  pattern?: string;
}

export interface PropertyRule {
  key: string;
  required: boolean;
  value: Make;
}

const utf8 = new TextEncoder();
const WHITESPACE = ' \t\n\r';
const MAX_INTEGER_DIGITS = 15;
const MAX_FRACTION_DIGITS = 15;
const MAX_EXPONENT_DIGITS = 2;

export class JsonBuilder {
  constructor(
    readonly nfa: Nfa,
    readonly bounds: JsonBounds,
  ) {}

  /** The bytes of `text` (UTF-8), in order. */
  text(text: string): Fragment {
    return this.nfa.literal(utf8.encode(text));
  }

  /** One byte out of the characters of `chars` (ASCII). */
  oneOf(chars: string): Fragment {
    const start = this.nfa.state();
    const end = this.nfa.state();
    for (const c of chars) this.nfa.edge(start, c.charCodeAt(0), c.charCodeAt(0), end);
    return { start, end };
  }

  ws(): Fragment {
    return this.nfa.repeat(() => this.oneOf(WHITESPACE), 0, this.bounds.maxWhitespace);
  }

  /** The JSON text of a constant, compact (`JSON.stringify`). */
  constant(value: unknown): Fragment {
    return this.text(JSON.stringify(value));
  }

  integer(): Fragment {
    const n = this.nfa;
    const digits = () => n.range(0x30, 0x39);
    const magnitude = n.alt([this.text('0'), n.seq([n.range(0x31, 0x39), n.repeat(digits, 0, MAX_INTEGER_DIGITS - 1)])]);
    return n.seq([n.optional(this.text('-')), magnitude]);
  }

  number(): Fragment {
    const n = this.nfa;
    const digits = () => n.range(0x30, 0x39);
    const fraction = n.optional(n.seq([this.text('.'), n.repeat(digits, 1, MAX_FRACTION_DIGITS)]));
    const exponent = n.optional(n.seq([this.oneOf('eE'), n.optional(this.oneOf('+-')), n.repeat(digits, 1, MAX_EXPONENT_DIGITS)]));
    return n.seq([this.integer(), fraction, exponent]);
  }

  /** A string literal whose decoded text has `minLength..maxLength` characters and matches `pattern` (anywhere, as JSON Schema means it). */
  string(bounds: StringBounds, argument: string): Fragment {
    const { minLength, maxLength, pattern } = bounds;
    let chars: { nfa: Nfa; frag: Fragment };
    if (pattern !== undefined) {
      chars = regexChars(pattern, argument, 'search', this.nfa.limit);
      if (minLength > 0 || maxLength < Infinity) chars = countChars(chars.nfa, chars.frag, minLength, maxLength);
    } else {
      const nfa = new Nfa(this.nfa.limit, argument);
      chars = { nfa, frag: nfa.repeat(() => nfa.ranges(ANY_CHAR), minLength, maxLength) };
    }
    const body = lowerChars(chars.nfa, chars.frag, this.nfa, 'json');
    return this.nfa.seq([this.text('"'), body, this.text('"')]);
  }

  array(item: Make, minItems: number, maxItems: number): Fragment {
    const n = this.nfa;
    const sep = () => n.seq([this.ws(), this.text(','), this.ws()]);
    return n.seq([this.text('['), this.ws(), n.list(item, sep, minItems, maxItems), this.ws(), this.text(']')]);
  }

  /**
   * An object with the given properties in the given order, the optional ones present or not.
   * Two chains of states, "nothing written yet" and "something written", decide whether a comma
   * comes before the next property; each property's value is built once.
   */
  object(properties: PropertyRule[]): Fragment {
    const n = this.nfa;
    const open = n.seq([this.text('{'), this.ws()]);
    let none = open.end;
    let some = n.state();
    for (const property of properties) {
      const before = n.state();
      n.epsilon(none, before);
      const comma = n.seq([this.ws(), this.text(','), this.ws()]);
      n.epsilon(some, comma.start);
      n.epsilon(comma.end, before);
      const pair = n.seq([this.constant(property.key), this.ws(), this.text(':'), this.ws(), property.value()]);
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
    }
    const close = n.seq([this.ws(), this.text('}')]);
    n.epsilon(none, close.start);
    n.epsilon(some, close.start);
    return { start: open.start, end: close.end };
  }

  /** An object with any keys, each value built by `value`. */
  map(value: Make): Fragment {
    const n = this.nfa;
    const pair = () => n.seq([this.string({ minLength: 0, maxLength: Infinity }, n.argument), this.ws(), this.text(':'), this.ws(), value()]);
    const sep = () => n.seq([this.ws(), this.text(','), this.ws()]);
    return n.seq([this.text('{'), this.ws(), n.list(pair, sep, 0, Infinity), this.ws(), this.text('}')]);
  }

  /** Any JSON value nested at most `depth` more levels. */
  anyValue(depth: number = this.bounds.maxDepth): Fragment {
    const parts = [
      this.text('null'),
      this.text('true'),
      this.text('false'),
      this.number(),
      this.string({ minLength: 0, maxLength: Infinity }, this.nfa.argument),
    ];
    if (depth > 0) {
      parts.push(this.array(() => this.anyValue(depth - 1), 0, Infinity));
      parts.push(this.map(() => this.anyValue(depth - 1)));
    }
    return this.nfa.alt(parts);
  }
}
