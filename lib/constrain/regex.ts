/**
 * The regular-expression subset the matcher compiles, with ECMAScript `u`-flag meaning (code
 * points, not UTF-16 units):
 *   literals and escapes (`\n \t \r \v \f \0 \xHH \uHHHH \u{H…} \cX`, escaped syntax characters),
 *   classes `[a-z_]`, `[^…]`, `\d \w \s \D \W \S`, `.` (any character but a line terminator),
 *   quantifiers `* + ? {m} {m,} {m,n}` (lazy forms mean the same language), alternation `|`,
 *   groups `(…)`, `(?:…)`, `(?<name>…)`; `^` / `$` only at the ends of a top-level alternative.
 * Backreferences, lookaround, word boundaries, Unicode property escapes and inline flags are not
 * regular or not supported: they raise an `InvalidInputError` that names them.
 */
import { InvalidInputError } from '../errors.js';
import { ANY_CHAR, charRange, complement, normalize, union, type CharSet } from './charset.js';
import { Nfa, type Fragment } from './nfa.js';

/** A parsed pattern: the regular language as a tree, before any automaton state exists. */
export type RegexNode =
  | { kind: 'set'; set: CharSet }
  | { kind: 'seq'; items: RegexNode[] }
  | { kind: 'alt'; items: RegexNode[] }
  | { kind: 'repeat'; item: RegexNode; min: number; max: number }
  | { kind: 'anchor'; at: 'start' | 'end' };

const DIGIT: CharSet = charRange(0x30, 0x39);
const WORD: CharSet = normalize([
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
]);
const SPACE: CharSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
const LINE_TERMINATORS: CharSet = normalize([
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
]);
const DOT: CharSet = complement(LINE_TERMINATORS);
const SYNTAX = new Set(Array.from('^$\\.*+?()[]{}|/', (c) => c.codePointAt(0)!));

/**
 * Deepest nesting of groups a pattern may have. The parser and the automaton builder recurse once
 * per level, so a pattern of thousands of nested groups would overflow the stack; RE2 and Rust's
 * regex cap nesting the same way.
 */
export const MAX_REGEX_NESTING = 100;

class Parser {
  private i = 0;
  private depth = 0;
  private readonly cps: number[];

  constructor(
    pattern: string,
    private readonly argument: string,
  ) {
    this.cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  }

  fail(what: string): never {
    throw new InvalidInputError(this.argument, `${what} (at character ${this.i + 1}) is not supported; use literals, classes, ., quantifiers, | and groups.`);
  }

  peek(offset = 0): number | undefined {
    return this.cps[this.i + offset];
  }

  eat(c: string): boolean {
    if (this.peek() === c.codePointAt(0)) {
      this.i++;
      return true;
    }
    return false;
  }

  parse(): RegexNode {
    const node = this.alternation();
    if (this.i < this.cps.length) this.fail(`an unmatched ")"`);
    return node;
  }

  alternation(): RegexNode {
    const items = [this.sequence()];
    while (this.eat('|')) items.push(this.sequence());
    return items.length === 1 ? items[0] : { kind: 'alt', items };
  }

  sequence(): RegexNode {
    const items: RegexNode[] = [];
    while (this.i < this.cps.length && this.peek() !== 0x7c && this.peek() !== 0x29) {
      const atom = this.atom();
      items.push(atom.kind === 'anchor' ? atom : this.quantified(atom));
    }
    return items.length === 1 ? items[0] : { kind: 'seq', items };
  }

  quantified(atom: RegexNode): RegexNode {
    for (;;) {
      let min: number;
      let max: number;
      if (this.eat('*')) [min, max] = [0, Infinity];
      else if (this.eat('+')) [min, max] = [1, Infinity];
      else if (this.eat('?')) [min, max] = [0, 1];
      else if (this.peek() === 0x7b) [min, max] = this.braces();
      else return atom;
      this.eat('?'); // a lazy quantifier matches the same language
      atom = { kind: 'repeat', item: atom, min, max };
    }
  }

  braces(): [number, number] {
    this.i++;
    const min = this.number();
    let max = min;
    if (this.eat(',')) max = this.peek() === 0x7d ? Infinity : this.number();
    if (!this.eat('}')) this.fail('a malformed {m,n} quantifier');
    return [min, max];
  }

  number(): number {
    let digits = '';
    while (this.peek() !== undefined && this.peek()! >= 0x30 && this.peek()! <= 0x39) digits += String.fromCodePoint(this.cps[this.i++]);
    if (digits === '') this.fail('a malformed {m,n} quantifier');
    return Number(digits);
  }

  atom(): RegexNode {
    const c = this.cps[this.i++];
    switch (c) {
      case 0x5e:
        return { kind: 'anchor', at: 'start' };
      case 0x24:
        return { kind: 'anchor', at: 'end' };
      case 0x2e:
        return { kind: 'set', set: DOT };
      case 0x5b:
        return { kind: 'set', set: this.charClass() };
      case 0x28:
        return this.group();
      case 0x5c:
        return { kind: 'set', set: this.escape(false) };
      default:
        return { kind: 'set', set: charRange(c) };
    }
  }

  group(): RegexNode {
    if (++this.depth > MAX_REGEX_NESTING) {
      throw new InvalidInputError(this.argument, `nests groups more than ${MAX_REGEX_NESTING} deep (at character ${this.i}); flatten the pattern.`);
    }
    if (this.eat('?')) {
      if (this.eat(':')) {
        // non-capturing
      } else if (this.peek() === 0x3c && this.peek(1) !== 0x3d && this.peek(1) !== 0x21) {
        while (this.i < this.cps.length && this.cps[this.i] !== 0x3e) this.i++;
        this.i++;
      } else {
        this.fail('lookaround or an inline flag group "(?"');
      }
    }
    const inner = this.alternation();
    if (!this.eat(')')) this.fail('an unclosed group');
    this.depth--;
    return inner;
  }

  charClass(): CharSet {
    const negated = this.eat('^');
    const parts: CharSet[] = [];
    while (this.i < this.cps.length && this.peek() !== 0x5d) {
      const lo = this.classAtom();
      if (this.peek() === 0x2d && this.peek(1) !== 0x5d && this.peek(1) !== undefined) {
        this.i++;
        const hi = this.classAtom();
        if (lo.length !== 1 || hi.length !== 1 || lo[0][0] !== lo[0][1] || hi[0][0] !== hi[0][1]) this.fail('a class range between classes');
        parts.push(normalize([[lo[0][0], hi[0][0]]]));
      } else {
        parts.push(lo);
      }
    }
    if (!this.eat(']')) this.fail('an unclosed character class');
    const set = union(...parts);
    return negated ? complement(set) : set;
  }

  classAtom(): CharSet {
    const c = this.cps[this.i++];
    return c === 0x5c ? this.escape(true) : charRange(c);
  }

  escape(inClass: boolean): CharSet {
    const c = this.cps[this.i++];
    if (c === undefined) this.fail('a trailing backslash');
    const letter = String.fromCodePoint(c);
    switch (letter) {
      case 'd':
        return DIGIT;
      case 'D':
        return complement(DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return complement(WORD);
      case 's':
        return SPACE;
      case 'S':
        return complement(SPACE);
      case 'n':
        return charRange(0x0a);
      case 't':
        return charRange(0x09);
      case 'r':
        return charRange(0x0d);
      case 'v':
        return charRange(0x0b);
      case 'f':
        return charRange(0x0c);
      case '0':
        return charRange(0);
      case 'b':
        if (inClass) return charRange(0x08);
        return this.fail('a word boundary \\b');
      case 'B':
        return this.fail('a word boundary \\B');
      case 'c': {
        const next = this.cps[this.i++];
        return charRange(next % 32);
      }
      case 'x':
        return charRange(this.hex(2));
      case 'u':
        return charRange(this.unicodeEscape());
      case 'p':
      case 'P':
        return this.fail('a Unicode property escape \\p{…}');
      case 'k':
        return this.fail('a named backreference \\k<…>');
      default:
        if (c >= 0x31 && c <= 0x39) this.fail('a backreference');
        if (SYNTAX.has(c) || (inClass && c === 0x2d)) return charRange(c);
        return this.fail(`the escape \\${letter}`);
    }
  }

  hex(count: number): number {
    let text = '';
    for (let k = 0; k < count; k++) text += String.fromCodePoint(this.cps[this.i++] ?? 0x20);
    if (!/^[0-9a-fA-F]+$/.test(text)) this.fail('a malformed hex escape');
    return parseInt(text, 16);
  }

  unicodeEscape(): number {
    if (this.eat('{')) {
      let text = '';
      while (this.i < this.cps.length && this.peek() !== 0x7d) text += String.fromCodePoint(this.cps[this.i++]);
      this.i++;
      return parseInt(text, 16);
    }
    const unit = this.hex(4);
    // A surrogate pair written as two escapes is one character under the u flag.
    if (unit >= 0xd800 && unit <= 0xdbff && this.peek() === 0x5c && this.peek(1) === 0x75) {
      this.i += 2;
      const low = this.hex(4);
      if (low >= 0xdc00 && low <= 0xdfff) return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
    }
    if (unit >= 0xd800 && unit <= 0xdfff) this.fail('a lone surrogate escape');
    return unit;
  }
}

/** Whether the pattern tests the whole text (`full`, the `regex` format) or any part of it (`search`, JSON Schema's `pattern`). */
export type RegexMode = 'full' | 'search';

/** `pattern` parsed (ECMAScript syntax with the `u` flag, the subset above); errors name `argument`. */
export function parseRegex(pattern: string, argument: string): RegexNode {
  try {
    new RegExp(pattern, 'u');
  } catch (error) {
    throw new InvalidInputError(argument, `is not a valid regular expression (${(error as Error).message.slice(0, 200)}).`, { cause: error });
  }
  return new Parser(pattern, argument).parse();
}

/**
 * What `regexChars` will build, before it builds it: `states` of the character automaton, and
 * `extra`, the sum of `setCost` over every character edge (the states its encoding into bytes
 * adds). Both are upper bounds (a product may be Infinity); repeats multiply their body.
 */
export function regexSize(root: RegexNode, mode: RegexMode, setCost: (set: CharSet) => number): { states: number; extra: number } {
  const size = (node: RegexNode): { states: number; extra: number } => {
    switch (node.kind) {
      case 'set':
        return { states: 2, extra: setCost(node.set) };
      case 'anchor':
        return { states: 0, extra: 0 };
      case 'seq':
      case 'alt': {
        let states = node.kind === 'alt' && node.items.length > 1 ? 2 : 0;
        let extra = 0;
        for (const item of node.items) {
          const s = size(item);
          states += s.states;
          extra += s.extra;
        }
        return { states: Math.max(states, 1), extra };
      }
      case 'repeat': {
        const s = size(node.item);
        const copies = node.min + (node.max === Infinity ? 1 : node.max - node.min);
        return { states: 2 + copies * s.states, extra: copies * s.extra };
      }
    }
  };
  // Search mode wraps every top-level alternative in `.*` where it is not anchored.
  const wrapper = { states: 3, extra: setCost(ANY_CHAR) };
  let states = 2;
  let extra = 0;
  for (const branch of branchesOf(root)) {
    const body = size({ kind: 'seq', items: branch.items });
    states += body.states + 2;
    extra += body.extra;
    if (mode === 'search') {
      for (const anchored of [branch.anchoredStart, branch.anchoredEnd]) {
        states += anchored ? 1 : wrapper.states;
        extra += anchored ? 0 : wrapper.extra;
      }
    }
  }
  return { states, extra };
}

/** The top-level alternatives, with `^` / `$` at their ends taken off. */
function branchesOf(root: RegexNode): Array<{ items: RegexNode[]; anchoredStart: boolean; anchoredEnd: boolean }> {
  return (root.kind === 'alt' ? root.items : [root]).map((branch) => {
    const items = branch.kind === 'seq' ? [...branch.items] : [branch];
    const anchoredStart = items[0]?.kind === 'anchor' && items[0].at === 'start';
    if (anchoredStart) items.shift();
    const last = items[items.length - 1];
    const anchoredEnd = last?.kind === 'anchor' && last.at === 'end';
    if (anchoredEnd) items.pop();
    return { items, anchoredStart, anchoredEnd };
  });
}

/** The character-level automaton of a parsed pattern (in a fresh NFA of at most `limit` states). */
export function regexChars(root: RegexNode, argument: string, mode: RegexMode, limit: number): { nfa: Nfa; frag: Fragment } {
  const nfa = new Nfa(limit, argument);
  const any = () => nfa.repeat(() => nfa.ranges(ANY_CHAR), 0, Infinity);
  const parts = branchesOf(root).map(({ items, anchoredStart, anchoredEnd }) => {
    const body = nfa.seq(items.map((item) => build(nfa, item, argument)));
    if (mode === 'full') return body;
    return nfa.seq([anchoredStart ? nfa.empty() : any(), body, anchoredEnd ? nfa.empty() : any()]);
  });
  return { nfa, frag: nfa.alt(parts) };
}

function build(nfa: Nfa, node: RegexNode, argument: string): Fragment {
  switch (node.kind) {
    case 'set':
      return nfa.ranges(node.set);
    case 'seq':
      return nfa.seq(node.items.map((item) => build(nfa, item, argument)));
    case 'alt':
      return nfa.alt(node.items.map((item) => build(nfa, item, argument)));
    case 'repeat':
      return nfa.repeat(() => build(nfa, node.item, argument), node.min, node.max);
    case 'anchor':
      throw new InvalidInputError(argument, `"${node.at === 'start' ? '^' : '$'}" is supported only at the start or end of the whole pattern (or of a top-level alternative).`);
  }
}
