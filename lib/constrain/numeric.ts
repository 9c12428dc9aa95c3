/**
 * Numbers within bounds as finite automata over their decimal digits: JSON Schema's `minimum`,
 * `maximum`, `exclusiveMinimum`, `exclusiveMaximum` and `multipleOf`.
 *
 * A number is compared with a bound digit by digit, as a person does: an integer part with fewer
 * digits is smaller; with as many, the first differing digit decides, then the fraction's. So an
 * automaton that reads the digits needs to remember only whether what it read so far still equals
 * the lower bound's digits, the upper bound's, both or neither, plus (for `multipleOf`) the value
 * read so far modulo the divisor. Its states are (digits left, still tight to a bound, remainder);
 * every state that is tight to neither bound is shared across lengths.
 *
 * What is written: integers without leading zeros (and no `-0`), decimals `I.F` without an
 * exponent, and never more than 15 digits in all, so that every text is exact as a double (15 is
 * the most digits a double keeps) and an exclusive bound holds after parsing, not just in decimal.
 * `multipleOf` must be a positive integer, and makes the value an integer.
 */
import { InvalidInputError } from '../errors.js';
import type { Ir } from './ir.js';
import type { Fragment, Nfa } from './nfa.js';

/** Most digits of a bounded number, integer and fraction together. */
export const MAX_BOUNDED_DIGITS = 15;

export interface NumberBounds {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  /** A positive integer; the value is then an integer multiple of it. */
  multipleOf?: number;
  /** Whether a fraction may be written (type `number` without `multipleOf`). */
  fraction: boolean;
}

/** A non-negative decimal as digit strings: `int` without leading zeros ("0" for zero), `frac` without trailing zeros. */
interface Decimal {
  int: string;
  frac: string;
}

interface Side {
  value: Decimal;
  inclusive: boolean;
}

/** The exact decimal digits of a finite double's shortest representation, as `String` writes it. */
export function decimalOf(x: number): Decimal {
  const text = String(Math.abs(x));
  const [mantissa, exponentText] = text.split('e');
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  const [whole, part = ''] = mantissa.split('.');
  const digits = whole + part;
  const point = whole.length + exponent;
  const int = point <= 0 ? '0' : (digits + '0'.repeat(Math.max(point - digits.length, 0))).slice(0, point);
  const frac = point >= digits.length ? '' : point < 0 ? '0'.repeat(-point) + digits : digits.slice(point);
  return { int: int.replace(/^0+(?=\d)/, ''), frac: frac.replace(/0+$/, '') };
}

/** An upper bound of the states of `boundedNumber(bounds)`, known without building anything. */
export function boundedNumberSize(bounds: NumberBounds): number {
  // Per length and position: three ways to be tight to a bound, in the integer part and the
  // fraction; the loose states, one per digit left, remainder and whether it is the first digit.
  // Both signs.
  const perSide = 2 * MAX_BOUNDED_DIGITS * (MAX_BOUNDED_DIGITS + 1) * 4 + 2 * (MAX_BOUNDED_DIGITS + 1) * (bounds.multipleOf ?? 1);
  return 2 * perSide + 3;
}

/**
 * The automaton of the numbers within `bounds`, or `undefined` when none of at most 15 digits is
 * (the caller names the keywords). Call it only once `boundedNumberSize(bounds)` fits: the
 * search that finds its states is that large.
 */
export function boundedNumber(bounds: NumberBounds): Ir | undefined {
  const { minimum, maximum } = bounds;
  const modulus = bounds.multipleOf ?? 1;
  const fraction = bounds.fraction && bounds.multipleOf === undefined;
  const lo: Side | undefined = minimum === undefined ? undefined : { value: decimalOf(minimum), inclusive: !bounds.exclusiveMinimum };
  const hi: Side | undefined = maximum === undefined ? undefined : { value: decimalOf(maximum), inclusive: !bounds.exclusiveMaximum };
  const zero: Decimal = { int: '0', frac: '' };
  // x >= 0: magnitudes from max(lo, 0) up to hi; x < 0: magnitudes above 0 (no "-0"), from -hi up to -lo.
  const positive = maximum !== undefined && maximum < 0 ? undefined : magnitudes(minimum === undefined || minimum < 0 ? { value: zero, inclusive: true } : lo!, hi, fraction, modulus);
  const negative =
    minimum !== undefined && minimum >= 0
      ? undefined
      : magnitudes(maximum === undefined || maximum >= 0 ? { value: zero, inclusive: false } : hi!, lo, fraction, modulus);
  const plus = positive && positive.accepting > 0 ? positive : undefined;
  const minus = negative && negative.accepting > 0 ? negative : undefined;
  if (!plus && !minus) return undefined;
  return {
    kind: 'leaf',
    size: (plus?.states ?? 0) + (minus?.states ?? 0) + 3,
    build: (nfa) => {
      const start = nfa.state();
      const end = nfa.state();
      plus?.build(nfa, start, end);
      if (minus) {
        const sign = nfa.state();
        nfa.edge(start, 0x2d, 0x2d, sign);
        minus.build(nfa, sign, end);
      }
      return { start, end } satisfies Fragment;
    },
  };
}

/** One automaton state: which part is being read, and how the digits so far compare with the bounds. */
interface State {
  fraction: boolean;
  /** Digits of the integer part (it is read knowing its length). */
  length: number;
  /** Digits read in the current part. */
  at: number;
  /** The digits so far equal the lower bound's (the upper bound's). */
  tightLo: boolean;
  tightHi: boolean;
  remainder: number;
}

interface Magnitudes {
  /** The states `build` creates. */
  states: number;
  /** Accepting states (0: no number fits). */
  accepting: number;
  build(nfa: Nfa, from: number, to: number): void;
}

/**
 * Non-negative decimals (no sign) in `[lo, hi]` (each end inclusive or not, `hi` optional) with
 * at most 15 digits, multiples of `modulus` when it is not 1: an explicit automaton, found by a
 * search over its states.
 */
function magnitudes(lo: Side, hi: Side | undefined, fraction: boolean, modulus: number): Magnitudes {
  const ids = new Map<string, number>();
  const states: State[] = [];
  const edges: Array<[number, number, number]> = [];
  const accepting: number[] = [];
  const entries: number[] = [];
  const digit = (text: string, i: number) => (i < text.length ? text.charCodeAt(i) - 48 : 0);
  // Bounds carry no trailing fraction zeros, so "no digit left" is "the rest equals zero".
  const ended = (text: string, i: number) => i >= text.length;

  const id = (s: State): number => {
    // A state tight to neither bound is the same state whatever led there, given what is left.
    const loose = !s.tightLo && !s.tightHi;
    const key = s.fraction
      ? loose
        ? `f:${MAX_BOUNDED_DIGITS - s.length - s.at}:${s.at > 0}`
        : `f:${s.length}:${s.at}:${s.tightLo}:${s.tightHi}`
      : loose && !fraction
        ? `i:${s.length - s.at}:${s.remainder}:${s.at === 0}`
        : `i:${s.length}:${s.at}:${s.tightLo}:${s.tightHi}:${s.remainder}`;
    let n = ids.get(key);
    if (n === undefined) {
      n = states.length;
      ids.set(key, n);
      states.push(s);
    }
    return n;
  };

  // Whether the number may end here: equal to a bound only where that bound is inclusive.
  const mayEnd = (s: State): boolean => {
    if (s.remainder !== 0) return false;
    const at = s.fraction ? s.at : 0;
    if (s.tightLo && !(ended(lo.value.frac, at) && lo.inclusive)) return false;
    if (s.tightHi && ended(hi!.value.frac, at) && !hi!.inclusive) return false;
    return true;
  };

  for (let length = 1; length <= MAX_BOUNDED_DIGITS; length++) {
    if (length < lo.value.int.length || (hi && length > hi.value.int.length)) continue;
    const tightLo = length === lo.value.int.length;
    const tightHi = hi !== undefined && length === hi.value.int.length;
    entries.push(id({ fraction: false, length, at: 0, tightLo, tightHi, remainder: 0 }));
  }
  for (let n = 0; n < states.length; n++) {
    const s = states[n];
    const step = (d: number, next: State) => edges.push([n, 0x30 + d, id(next)]);
    if (!s.fraction && s.at < s.length) {
      // An integer digit; only a one-digit integer may be 0.
      for (let d = s.at === 0 && s.length > 1 ? 1 : 0; d <= 9; d++) {
        const [a, b] = [digit(lo.value.int, s.at), hi ? digit(hi.value.int, s.at) : 9];
        if ((s.tightLo && d < a) || (s.tightHi && d > b)) continue;
        step(d, { ...s, at: s.at + 1, tightLo: s.tightLo && d === a, tightHi: s.tightHi && d === b, remainder: (s.remainder * 10 + d) % modulus });
      }
      continue;
    }
    if ((!s.fraction || s.at > 0) && mayEnd(s)) accepting.push(n);
    if (!s.fraction) {
      if (fraction && s.length < MAX_BOUNDED_DIGITS) edges.push([n, 0x2e, id({ ...s, fraction: true, at: 0 })]);
      continue;
    }
    if (s.length + s.at >= MAX_BOUNDED_DIGITS) continue;
    for (let d = 0; d <= 9; d++) {
      const [a, b] = [digit(lo.value.frac, s.at), hi ? digit(hi.value.frac, s.at) : 9];
      if ((s.tightLo && d < a) || (s.tightHi && d > b)) continue;
      step(d, { ...s, at: s.at + 1, tightLo: s.tightLo && d === a, tightHi: s.tightHi && d === b });
    }
  }
  return {
    states: states.length,
    accepting: accepting.length,
    build(nfa, from, to) {
      const map = states.map(() => nfa.state());
      for (const e of entries) nfa.epsilon(from, map[e]);
      for (const [a, byte, b] of edges) nfa.edge(map[a], byte, byte, map[b]);
      for (const a of accepting) nfa.epsilon(map[a], to);
    },
  };
}
/** The error for bounds no number of at most 15 digits satisfies. */
export function noNumberError(where: string, bounds: NumberBounds): InvalidInputError {
  const parts = [
    bounds.minimum !== undefined ? `${bounds.exclusiveMinimum ? '>' : '>='} ${bounds.minimum}` : '',
    bounds.maximum !== undefined ? `${bounds.exclusiveMaximum ? '<' : '<='} ${bounds.maximum}` : '',
    bounds.multipleOf !== undefined ? `a multiple of ${bounds.multipleOf}` : '',
  ].filter(Boolean);
  return new InvalidInputError(where, `no ${bounds.fraction ? 'number' : 'integer'} of at most ${MAX_BOUNDED_DIGITS} digits is ${parts.join(' and ')}, so nothing can be generated.`);
}
