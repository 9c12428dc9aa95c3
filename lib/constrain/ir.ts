/**
 * A format between its source (a JSON Schema, a pattern) and its byte automaton: a tree of
 * regular-language parts whose automaton size is known before a single state is built. A subschema
 * used in several places (a `$ref`, an array's item) is one node that the tree shares, so a
 * schema is read once however often its parts repeat, and `size` is linear in the schema.
 *
 * `size` is an upper bound of the states `build` creates. Compiling checks it against the state
 * limit first, so a format too large to compile (`a{0,100000}`, `maxItems` of a million) is
 * refused at once instead of after building half a million states on the caller's thread.
 */
import type { Fragment, Nfa } from './nfa.js';

export type Ir =
  /** One byte out of the ranges. */
  | { readonly kind: 'bytes'; readonly ranges: ReadonlyArray<readonly [number, number]> }
  /** These bytes in order. */
  | { readonly kind: 'text'; readonly bytes: Uint8Array }
  | { readonly kind: 'seq'; readonly items: readonly Ir[] }
  | { readonly kind: 'alt'; readonly items: readonly Ir[] }
  /** `item` between `min` and `max` times (`max` may be Infinity); every copy gets its own states. */
  | { readonly kind: 'repeat'; readonly item: Ir; readonly min: number; readonly max: number }
  /**
   * A part with its own construction (a string literal's body, an object's properties, a number
   * range): `size` bounds what `build` creates, `child` builds a fresh copy of a nested part.
   */
  | { readonly kind: 'leaf'; readonly size: number; readonly build: (nfa: Nfa, child: (ir: Ir) => Fragment) => Fragment };

export const seq = (...items: Ir[]): Ir => (items.length === 1 ? items[0] : { kind: 'seq', items });
export const alt = (...items: Ir[]): Ir => (items.length === 1 ? items[0] : { kind: 'alt', items });
export const repeat = (item: Ir, min: number, max: number): Ir => ({ kind: 'repeat', item, min, max });
export const optional = (item: Ir): Ir => repeat(item, 0, 1);
export const EMPTY: Ir = { kind: 'seq', items: [] };

/** `min` to `max` items separated by `sep`: `item (sep item)*` within the bounds. */
export function list(item: Ir, sep: Ir, min: number, max: number): Ir {
  if (max === 0) return EMPTY;
  const some = seq(item, repeat(seq(sep, item), Math.max(min - 1, 0), max - 1));
  return min === 0 ? optional(some) : some;
}

const sizes = new WeakMap<object, number>();

/** The most automaton states `build(nfa, ir)` creates (Infinity when unbounded). */
export function size(ir: Ir): number {
  const known = sizes.get(ir);
  if (known !== undefined) return known;
  let n: number;
  switch (ir.kind) {
    case 'bytes':
      n = 2;
      break;
    case 'text':
      n = ir.bytes.length + 1;
      break;
    case 'seq':
      n = ir.items.length === 0 ? 1 : ir.items.reduce((sum, item) => sum + size(item), 0);
      break;
    case 'alt':
      n = ir.items.length === 1 ? size(ir.items[0]) : ir.items.reduce((sum, item) => sum + size(item), 2);
      break;
    case 'repeat':
      n = 2 + (ir.min + (ir.max === Infinity ? 1 : ir.max - ir.min)) * size(ir.item);
      break;
    case 'leaf':
      n = ir.size;
      break;
  }
  sizes.set(ir, n);
  return n;
}

/** Builds a fresh copy of `ir` into `nfa`. */
export function build(nfa: Nfa, ir: Ir): Fragment {
  switch (ir.kind) {
    case 'bytes':
      return nfa.ranges(ir.ranges);
    case 'text':
      return nfa.literal(ir.bytes);
    case 'seq':
      return nfa.seq(ir.items.map((item) => build(nfa, item)));
    case 'alt':
      return nfa.alt(ir.items.map((item) => build(nfa, item)));
    case 'repeat':
      return nfa.repeat(() => build(nfa, ir.item), ir.min, ir.max);
    case 'leaf':
      return ir.build(nfa, (child) => build(nfa, child));
  }
}
